"""channel_memory: the channel memory items table, created or adopted

Revision ID: channel_memory_0001
Revises:
Create Date: 2026-12-03 07:00:00

``channel_memory_extraction_items`` as the kernel's chain created it up to its 0005. A database
made by an older goclaw, whose kernel chain owned the table, already has it, with rows: it is
adopted as it is. Otherwise it is created.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

import goclaw.contracts.columns

revision = "channel_memory_0001"
down_revision = None
branch_labels = None
depends_on = None


def _create_channel_memory_extraction_items() -> None:
    op.create_table(
        "channel_memory_extraction_items",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("channel", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("user_id", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("content", sa.Text(), server_default="", nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("episodic_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("created_at", goclaw.contracts.columns.UTCDateTime(timezone=True), nullable=False),
        sa.Column("reviewed_at", goclaw.contracts.columns.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("channel_memory_extraction_items", schema=None) as batch_op:
        batch_op.create_index("ix_channel_memory_scope", ["agent_id", "channel"], unique=False)


TABLES = {"channel_memory_extraction_items": _create_channel_memory_extraction_items}


def upgrade() -> None:
    existing = sa.inspect(op.get_bind())
    for name, create in TABLES.items():  # parents first
        if not existing.has_table(name, existing.default_schema_name):
            create()


def downgrade() -> None:
    for name in reversed(TABLES):
        op.drop_table(name)
