"""memory: per-agent BM25 statistics on PostgreSQL, kept by triggers

Revision ID: memory_0003
Revises: memory_0002
Create Date: 2026-12-05 15:00:00

The ``postgresql`` search backend computes the exact BM25 of the in-memory engine from document
frequencies, chunk count and mean length per agent: the tables ``memory_term_stats`` and
``memory_agent_stats``, kept by triggers on ``memory_chunks`` (:mod:`goclaw_memory.pg_stats`).
Existing chunks are counted here (backfill). Elsewhere the tables are created empty (the
engine keeps these figures in its own index).
"""

from __future__ import annotations

from alembic import op

from goclaw_memory.pg_stats import TABLES, install, uninstall

revision = "memory_0003"
down_revision = "memory_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        install(op.execute)
    else:  # the tables only (empty): every database has the tables the plugin declares
        for sql in TABLES:
            op.execute(sql)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        uninstall(op.execute)
    else:
        op.execute("DROP TABLE IF EXISTS memory_term_stats")
        op.execute("DROP TABLE IF EXISTS memory_agent_stats")
