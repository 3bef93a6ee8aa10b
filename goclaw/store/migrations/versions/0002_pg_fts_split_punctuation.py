"""PostgreSQL full text: split words at - _ / . : @ as the query side does

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02 14:30:00

PostgreSQL's default parser reads ``TCK-4471`` as the lexemes ``tck`` and ``-4471`` (a signed
integer), so a search for ``4471`` (or for ``TCK-4471``, whose query terms are ``tck`` and
``4471``) never matched the code itself, while SQLite's FTS5 tokenizer splits at the hyphen
and does. The generated ``tsv`` columns now normalise these separators to spaces before
``to_tsvector('simple', ...)``, so both backends index codes, paths, hosts and versions the
same way. SQLite needs no change.

Now that feature tables are their plugins', a table is only rebuilt if it is there: on a
database created after the split, the plugin that owns it creates it in its current shape.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

SEPARATORS = "[-_/.:@]+"


def _rebuild(table: str, index: str, source: str) -> None:
    existing = sa.inspect(op.get_bind())
    if not existing.has_table(table, existing.default_schema_name):
        return
    op.execute(f"DROP INDEX IF EXISTS {index}")
    op.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS tsv")
    op.execute(
        f"ALTER TABLE {table} ADD COLUMN tsv tsvector GENERATED ALWAYS AS "
        f"(to_tsvector('simple', regexp_replace({source}, '{SEPARATORS}', ' ', 'g'))) STORED"
    )
    op.execute(f"CREATE INDEX {index} ON {table} USING GIN (tsv)")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _rebuild("memory_chunks", "ix_memory_chunks_tsv", "text")
    _rebuild(
        "episodic_summaries",
        "ix_episodic_summaries_tsv",
        "coalesce(summary, '') || ' ' || coalesce(l0_abstract, '')",
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, index, source in (
        ("memory_chunks", "ix_memory_chunks_tsv", "text"),
        ("episodic_summaries", "ix_episodic_summaries_tsv", "coalesce(summary, '') || ' ' || coalesce(l0_abstract, '')"),
    ):
        op.execute(f"DROP INDEX IF EXISTS {index}")
        op.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS tsv")
        op.execute(f"ALTER TABLE {table} ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', {source})) STORED")
        op.execute(f"CREATE INDEX {index} ON {table} USING GIN (tsv)")
