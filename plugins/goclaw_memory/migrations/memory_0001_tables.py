"""memory: the memory index tables, created or adopted

Revision ID: memory_0001
Revises:
Create Date: 2026-12-03 06:30:00

``memory_documents`` and ``memory_chunks`` as the kernel's chain left them at its 0004
(``lex`` terms; PostgreSQL ``tsv`` generated from ``lex`` with a GIN index; no SQLite FTS5).
A database made by an older goclaw, whose kernel chain owned these tables, already has them,
with rows: they are adopted as they are. Otherwise (a new database, or one made while this
plugin was disabled) they are created.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

import goclaw.contracts.columns

revision = "memory_0001"
down_revision = None
branch_labels = None
depends_on = None

PG_TSV = (
    "ALTER TABLE memory_chunks ADD COLUMN tsv tsvector GENERATED ALWAYS AS "
    "(array_to_tsvector(array_remove(string_to_array(coalesce(lex, ''), ' '), ''))) STORED"
)
AutoString = sqlmodel.sql.sqltypes.AutoString
UTC = goclaw.contracts.columns.UTCDateTime


def _documents() -> None:
    op.create_table(
        "memory_documents",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("agent_id", AutoString(length=64), nullable=False),
        sa.Column("user_id", AutoString(length=255), nullable=False),
        sa.Column("path", AutoString(length=1024), nullable=False),
        sa.Column("content_hash", AutoString(length=64), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("mtime", sa.Float(), nullable=False),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
        sa.Column("indexed_at", UTC(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("agent_id", "user_id", "path", name="uq_memory_documents"),
    )


def _chunks() -> None:
    op.create_table(
        "memory_chunks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("agent_id", AutoString(length=64), nullable=False),
        sa.Column("user_id", AutoString(length=255), nullable=False),
        sa.Column("path", AutoString(length=1024), nullable=False),
        sa.Column("start_line", sa.Integer(), nullable=False),
        sa.Column("end_line", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), server_default="", nullable=False),
        sa.Column("chunk_hash", AutoString(length=64), nullable=False),
        sa.Column("embedding", goclaw.contracts.columns.Vector(), nullable=True),
        sa.Column("embedding_provider", AutoString(length=128), nullable=True),
        sa.Column("embedding_model", AutoString(length=255), nullable=True),
        sa.Column("embedding_dim", sa.Integer(), nullable=True),
        sa.Column("lex", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["document_id"], ["memory_documents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_memory_chunks_document", "memory_chunks", ["document_id"], unique=False)
    op.create_index("ix_memory_chunks_scope", "memory_chunks", ["agent_id", "user_id"], unique=False)
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_TSV)
        op.execute("CREATE INDEX ix_memory_chunks_tsv ON memory_chunks USING GIN (tsv)")


def upgrade() -> None:
    existing = sa.inspect(op.get_bind())
    if not existing.has_table("memory_documents", existing.default_schema_name):
        _documents()
    if not existing.has_table("memory_chunks", existing.default_schema_name):
        _chunks()


def downgrade() -> None:
    op.drop_table("memory_chunks")
    op.drop_table("memory_documents")
