"""memory: impact-ordered postings; statistics triggers only for the postgresql backend

Revision ID: memory_0004
Revises: memory_0003
Create Date: 2026-12-05 18:00:00

Creates ``memory_postings`` / ``memory_postings_ref`` (empty; replaced by ``memory_0007``)
and, on PostgreSQL, drops the statistics triggers and empties their tables: only the
``postgresql`` search backend reads them, and it installs the triggers again, counting every
chunk, on first use (``goclaw memory doctor --repair`` does too), so writes under any other
backend do not pay for them.
"""

from __future__ import annotations

from alembic import op

from goclaw_memory.pg_stats import TRIGGER_NAMES

# This revision's tables as they were then (memory_0007 replaces them).
POSTINGS_TABLES = (
    "CREATE TABLE IF NOT EXISTS memory_postings (agent_id VARCHAR(64) NOT NULL, term TEXT NOT NULL, "
    "impact DOUBLE PRECISION NOT NULL, chunk_id BIGINT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS ix_memory_postings ON memory_postings "
    "(agent_id, term, impact DESC, chunk_id)",
    "CREATE TABLE IF NOT EXISTS memory_postings_ref (agent_id VARCHAR(64) NOT NULL, "
    "avgdl DOUBLE PRECISION NOT NULL, PRIMARY KEY (agent_id))",
)

revision = "memory_0004"
down_revision = "memory_0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for sql in POSTINGS_TABLES:
        op.execute(sql)
    if op.get_bind().dialect.name == "postgresql":
        for name in TRIGGER_NAMES:
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON memory_chunks")
        op.execute("TRUNCATE memory_agent_stats, memory_term_stats")


def downgrade() -> None:
    # The triggers come back with the postgresql backend's first use or doctor --repair.
    op.execute("DROP TABLE IF EXISTS memory_postings")
    op.execute("DROP TABLE IF EXISTS memory_postings_ref")
