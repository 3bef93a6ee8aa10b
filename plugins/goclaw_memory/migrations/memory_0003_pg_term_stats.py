"""memory: per-agent BM25 statistics on PostgreSQL, kept by triggers

Revision ID: memory_0003
Revises: memory_0002
Create Date: 2026-12-05 15:00:00

The ``postgresql`` search backend computes the exact BM25 of the in-memory engine from document
frequencies, chunk count and mean length per agent: the tables ``memory_term_stats`` and
``memory_agent_stats``, kept by triggers on ``memory_chunks`` (:mod:`goclaw_memory.pg_stats`).
The tables are created empty: the triggers and the count of existing chunks come with the
``postgresql`` backend's first use (``memory_0004``).
"""

from __future__ import annotations

from alembic import op

from goclaw_memory.pg_stats import TABLES, uninstall

revision = "memory_0003"
down_revision = "memory_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for sql in TABLES:  # every database has the tables the plugin declares
        op.execute(sql)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        uninstall(op.execute)
    else:
        op.execute("DROP TABLE IF EXISTS memory_term_stats")
        op.execute("DROP TABLE IF EXISTS memory_agent_stats")
