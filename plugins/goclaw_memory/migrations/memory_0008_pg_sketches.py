"""memory: passage sketches for the postgresql backend

Revision ID: memory_0008
Revises: memory_0007
Create Date: 2026-12-06 05:00:00

``memory_sketches`` holds each embedded chunk's passage sketch for the reranker's passage step
(:mod:`goclaw_memory.pg_sketches`), on both dialects like the other tables of the ``postgresql``
backend (empty and unused elsewhere). Where that backend's triggers are installed, their
function is replaced by the one that also deletes a deleted chunk's sketch (nothing is counted
again). Chunks indexed before have no sketch: the passage step reads their text until
``goclaw memory doctor --repair`` sketches them.
"""

from __future__ import annotations

from alembic import op

from goclaw_memory.pg_stats import SKETCHES_TABLE, TRIGGER_NAMES, trigger_sql

revision = "memory_0008"
down_revision = "memory_0007"
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
    for sql in SKETCHES_TABLE:
        op.execute(sql)
    if _installed():
        op.get_bind().exec_driver_sql(trigger_sql(sketches=True))


def downgrade() -> None:
    if _installed():
        op.get_bind().exec_driver_sql(trigger_sql(sketches=False))
    op.execute("DROP TABLE IF EXISTS memory_sketches")
