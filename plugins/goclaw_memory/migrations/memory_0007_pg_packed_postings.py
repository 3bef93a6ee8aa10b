"""memory: packed postings for the postgresql backend

Revision ID: memory_0007
Revises: memory_0006
Create Date: 2026-12-06 02:00:00

The impact-ordered postings (``memory_postings``, ``memory_terms``, ``memory_postings_ref``) give
way to packed postings (:mod:`goclaw_memory.pg_postings`): one row of packed arrays per
(agent, term, user), a delta of recent writes, ordinals and tombstones. Where the
``postgresql`` backend's triggers are installed, they are installed again with the new
functions and every chunk is counted and packed afresh, in the migration's transaction (about
a minute per million chunks' worth of postings); elsewhere the tables stay empty until that
backend's first use.
"""

from __future__ import annotations

from alembic import op

from goclaw_memory.pg_postings import POSTINGS_STORAGE, POSTINGS_TABLES
from goclaw_memory.pg_stats import OLD_LAYOUT, TRIGGER_NAMES, install

revision = "memory_0007"
down_revision = "memory_0006"
branch_labels = None
depends_on = None


def _installed() -> bool:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return False
    found = bind.exec_driver_sql(
        "SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relname = 'memory_chunks' AND n.nspname = current_schema() AND t.tgname = ANY(%(n)s)",
        {"n": list(TRIGGER_NAMES)},
    ).scalar()
    return bool(found)


def upgrade() -> None:
    installed = _installed()
    if op.get_bind().dialect.name == "postgresql":
        for sql in OLD_LAYOUT:
            op.execute(sql)
        for name in TRIGGER_NAMES:  # they call the functions just dropped
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON memory_chunks")
    else:
        for name in ("memory_postings", "memory_postings_ref", "memory_terms"):
            op.execute(f"DROP TABLE IF EXISTS {name}")
    for sql in POSTINGS_TABLES:
        op.execute(sql)
    if op.get_bind().dialect.name == "postgresql":
        for sql in POSTINGS_STORAGE:
            op.execute(sql)
    if installed:
        install(op.get_bind().exec_driver_sql)


def downgrade() -> None:
    # memory_0005's empty tables; that layout's backend installs its triggers on first use.
    if op.get_bind().dialect.name == "postgresql":
        for name in TRIGGER_NAMES:
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON memory_chunks")
        op.execute("TRUNCATE memory_agent_stats, memory_term_stats")
    for name in ("memory_packed", "memory_delta", "memory_ords", "memory_tombs", "memory_packed_agents"):
        op.execute(f"DROP TABLE IF EXISTS {name}")
    op.execute(
        "CREATE TABLE memory_terms (id SERIAL NOT NULL, agent_id VARCHAR(64) NOT NULL, term TEXT NOT NULL, "
        "PRIMARY KEY (id))"
    )
    op.execute("CREATE UNIQUE INDEX ix_memory_terms ON memory_terms (agent_id, term)")
    op.execute(
        "CREATE TABLE memory_postings (term_id INTEGER NOT NULL, impact REAL NOT NULL, "
        "chunk_id BIGINT NOT NULL)"
    )
    op.execute("CREATE INDEX ix_memory_postings ON memory_postings (term_id, impact DESC, chunk_id)")
    op.execute("CREATE INDEX ix_memory_postings_chunk ON memory_postings (chunk_id)")
    op.execute(
        "CREATE TABLE memory_postings_ref (agent_id VARCHAR(64) NOT NULL, avgdl DOUBLE PRECISION NOT NULL, "
        "PRIMARY KEY (agent_id))"
    )
