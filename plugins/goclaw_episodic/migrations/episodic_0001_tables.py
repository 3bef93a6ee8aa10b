"""episodic: the episodic summaries table, created or adopted

Revision ID: episodic_0001
Revises:
Create Date: 2026-12-03 07:00:00

``episodic_summaries`` as the kernel's chain left it at its 0004 (``lex`` terms; PostgreSQL
``tsv`` generated from ``lex`` with a GIN index; no SQLite FTS5). A database made by an older
goclaw, whose kernel chain owned the table, already has it, with rows: it is adopted as it is.
Otherwise it is created.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

import goclaw.contracts.columns

revision = "episodic_0001"
down_revision = None
branch_labels = None
depends_on = None

PG_TSV = (
    "ALTER TABLE episodic_summaries ADD COLUMN tsv tsvector GENERATED ALWAYS AS "
    "(array_to_tsvector(array_remove(string_to_array(coalesce(lex, ''), ' '), ''))) STORED"
)


def _create_episodic_summaries() -> None:
    op.create_table(
        "episodic_summaries",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("tenant_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("user_id", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("session_key", sa.Text(), server_default="", nullable=False),
        sa.Column("summary", sa.Text(), server_default="", nullable=False),
        sa.Column("l0_abstract", sa.Text(), server_default="", nullable=False),
        sa.Column("key_topics", sa.JSON(), nullable=False),
        sa.Column("embedding", goclaw.contracts.columns.Vector(), nullable=True),
        sa.Column("embedding_provider", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=True),
        sa.Column("embedding_model", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
        sa.Column("embedding_dim", sa.Integer(), nullable=True),
        sa.Column("source_type", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("source_id", sqlmodel.sql.sqltypes.AutoString(length=512), nullable=False),
        sa.Column("turn_count", sa.Integer(), nullable=False),
        sa.Column("token_count", sa.Integer(), nullable=False),
        sa.Column("promoted_at", goclaw.contracts.columns.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", goclaw.contracts.columns.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", goclaw.contracts.columns.UTCDateTime(timezone=True), nullable=True),
        sa.Column("lex", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("agent_id", "user_id", "source_id", name="uq_episodic_source"),
    )
    with op.batch_alter_table("episodic_summaries", schema=None) as batch_op:
        batch_op.create_index("ix_episodic_scope", ["agent_id", "user_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_episodic_summaries_expires_at"), ["expires_at"], unique=False)
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_TSV)
        op.execute("CREATE INDEX ix_episodic_summaries_tsv ON episodic_summaries USING GIN (tsv)")


TABLES = {"episodic_summaries": _create_episodic_summaries}


def upgrade() -> None:
    existing = sa.inspect(op.get_bind())
    for name, create in TABLES.items():  # parents first
        if not existing.has_table(name, existing.default_schema_name):
            create()


def downgrade() -> None:
    for name in reversed(TABLES):
        op.drop_table(name)
