"""memory: the session tables, created or adopted

Revision ID: memory_0002
Revises: memory_0001
Create Date: 2026-12-03 07:00:00

``sessions`` and ``session_messages`` (the ``sessions`` service of this plugin) as the kernel's
chain created them up to its 0005. A database made by an older goclaw, whose kernel chain owned
these tables, already has them, with rows: they are adopted as they are. Otherwise they are
created.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

import goclaw.contracts.columns

revision = "memory_0002"
down_revision = "memory_0001"
branch_labels = None
depends_on = None


def _create_sessions() -> None:
    op.create_table(
        "sessions",
        sa.Column("key", sqlmodel.sql.sqltypes.AutoString(length=512), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("user_id", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("compaction_count", sa.Integer(), nullable=False),
        sa.Column("flushed_cycle", sa.Integer(), nullable=False),
        sa.Column("summary", sa.Text(), server_default="", nullable=False),
        sa.Column("created_at", goclaw.contracts.columns.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", goclaw.contracts.columns.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("key"),
    )


def _create_session_messages() -> None:
    op.create_table(
        "session_messages",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_key", sqlmodel.sql.sqltypes.AutoString(length=512), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("role", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("content", sa.Text(), server_default="", nullable=False),
        sa.Column("token_count", sa.Integer(), nullable=False),
        sa.Column("compacted", sa.Boolean(), nullable=False),
        sa.Column("created_at", goclaw.contracts.columns.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["session_key"], ["sessions.key"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("session_key", "seq", name="uq_session_messages_seq"),
    )


TABLES = {"sessions": _create_sessions, "session_messages": _create_session_messages}


def upgrade() -> None:
    existing = sa.inspect(op.get_bind())
    for name, create in TABLES.items():  # parents first
        if not existing.has_table(name, existing.default_schema_name):
            create()


def downgrade() -> None:
    for name in reversed(TABLES):
        op.drop_table(name)
