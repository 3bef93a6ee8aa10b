"""memory: postings keyed by integer term ids (a per-agent term dictionary)

Revision ID: memory_0005
Revises: memory_0004
Create Date: 2026-12-05 21:00:00

``memory_postings`` loses its agent id and term text for an integer id in ``memory_terms``
16 bytes of keys a row, the table and its index several times smaller. The old table is
dropped and the new one created; ``memory_0007`` replaces both with packed postings.
"""

from __future__ import annotations

from alembic import op

from goclaw_memory.pg_stats import TRIGGER_NAMES

# This revision's tables as they were then (memory_0007 replaces them).
POSTINGS_TABLES = (
    "CREATE TABLE IF NOT EXISTS memory_terms (id SERIAL NOT NULL, agent_id VARCHAR(64) NOT NULL, "
    "term TEXT NOT NULL, PRIMARY KEY (id))",
    "CREATE UNIQUE INDEX IF NOT EXISTS ix_memory_terms ON memory_terms (agent_id, term)",
    "CREATE TABLE IF NOT EXISTS memory_postings (term_id INTEGER NOT NULL, impact REAL NOT NULL, "
    "chunk_id BIGINT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS ix_memory_postings ON memory_postings (term_id, impact DESC, chunk_id)",
    "CREATE INDEX IF NOT EXISTS ix_memory_postings_chunk ON memory_postings (chunk_id)",
    "CREATE TABLE IF NOT EXISTS memory_postings_ref (agent_id VARCHAR(64) NOT NULL, "
    "avgdl DOUBLE PRECISION NOT NULL, PRIMARY KEY (agent_id))",
)

revision = "memory_0005"
down_revision = "memory_0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Where the triggers were installed, memory_0007 installs the current ones.
    op.execute("DROP TABLE IF EXISTS memory_postings")
    for sql in POSTINGS_TABLES:
        op.execute(sql)


def downgrade() -> None:
    # memory_0004's table, empty; the older backend installs its triggers again on first use.
    if op.get_bind().dialect.name == "postgresql":
        for name in TRIGGER_NAMES:
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON memory_chunks")
        op.execute("TRUNCATE memory_agent_stats, memory_term_stats, memory_postings_ref")
    op.execute("DROP TABLE IF EXISTS memory_postings")
    op.execute("DROP TABLE IF EXISTS memory_terms")
    op.execute(
        "CREATE TABLE memory_postings (agent_id VARCHAR(64) NOT NULL, term TEXT NOT NULL, "
        "impact DOUBLE PRECISION NOT NULL, chunk_id BIGINT NOT NULL)"
    )
    op.execute("CREATE INDEX ix_memory_postings ON memory_postings (agent_id, term, impact DESC, chunk_id)")
    op.execute("CREATE INDEX ix_memory_postings_chunk ON memory_postings (chunk_id)")
