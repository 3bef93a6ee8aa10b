"""Feature tables belong to their plugins

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03 06:30:00

No table changes here. From this revision on, the kernel's chain owns only the kernel's
tables; each feature's tables (memory documents and chunks, skills and grants, ...) are
created and upgraded by the chain of the plugin that declares them (``goclaw_schema`` hook,
one version table ``goclaw_schema_version_<component>`` each). On a database made by an
older goclaw those tables already exist, stamped by 0001-0004 of this chain: the plugins'
first revisions adopt them as they are, rows included.

The revision exists so that an older goclaw, which would expect every feature table to be
there and to be its own, refuses a database this goclaw has written instead of using it.
"""

from __future__ import annotations

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
