"""Memory chunks carry the retrieval engine's terms

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03 04:20:00

``memory_chunks.lex`` holds the terms of ``text`` from :mod:`goclaw_search.tokenize`
(stemmed words, whole codes such as ``tck-4471`` plus their parts, CJK bigrams), space
separated. Existing rows are backfilled here.

* SQLite: full-text search moves to the in-memory BM25 index of the retrieval engine, rebuilt
  from ``lex`` (and persisted next to the database); the FTS5 table and its triggers, which
  cost a third of the indexing time and ranked with another tokenizer, are dropped.
* PostgreSQL: ``tsv`` is generated from ``lex`` verbatim (``array_to_tsvector``), so the GIN
  index holds exactly the engine's terms: stemming and codes behave as on SQLite.

Now that feature tables are their plugins', this only runs where ``memory_chunks`` exists (a
database created before the split); the memory plugin's own chain creates the table with ``lex``
otherwise.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

BATCH = 2000
PG_TSV = (
    "ALTER TABLE memory_chunks ADD COLUMN tsv tsvector GENERATED ALWAYS AS "
    "(array_to_tsvector(array_remove(string_to_array(coalesce(lex, ''), ' '), ''))) STORED"
)


def _backfill() -> None:
    from goclaw_search.tokenize import default_tokenizer

    tok = default_tokenizer()
    conn = op.get_bind()
    last = 0
    while True:
        rows = conn.execute(
            sa.text("SELECT id, text FROM memory_chunks WHERE id > :last ORDER BY id LIMIT :n"),
            {"last": last, "n": BATCH},
        ).all()
        if not rows:
            return
        conn.execute(
            sa.text("UPDATE memory_chunks SET lex = :lex WHERE id = :id"),
            [{"id": int(r[0]), "lex": " ".join(tok.terms(r[1] or ""))} for r in rows],
        )
        last = int(rows[-1][0])


def upgrade() -> None:
    existing = sa.inspect(op.get_bind())
    if not existing.has_table("memory_chunks", existing.default_schema_name):
        return
    pg = op.get_bind().dialect.name == "postgresql"
    op.add_column("memory_chunks", sa.Column("lex", sa.Text(), nullable=True))
    if pg:
        op.execute("DROP INDEX IF EXISTS ix_memory_chunks_tsv")
        op.execute("ALTER TABLE memory_chunks DROP COLUMN IF EXISTS tsv")
    else:
        for name in ("memory_chunks_fts_ai", "memory_chunks_fts_ad", "memory_chunks_fts_au"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS memory_chunks_fts")
    _backfill()
    if pg:
        op.execute(PG_TSV)
        op.execute("CREATE INDEX ix_memory_chunks_tsv ON memory_chunks USING GIN (tsv)")


def downgrade() -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    if pg:
        op.execute("DROP INDEX IF EXISTS ix_memory_chunks_tsv")
        op.execute("ALTER TABLE memory_chunks DROP COLUMN IF EXISTS tsv")
        op.execute(
            "ALTER TABLE memory_chunks ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector("
            "'simple', regexp_replace(text, '[-_/.:@]+', ' ', 'g'))) STORED"
        )
        op.execute("CREATE INDEX ix_memory_chunks_tsv ON memory_chunks USING GIN (tsv)")
    else:
        op.execute(
            "CREATE VIRTUAL TABLE memory_chunks_fts USING fts5(text, content='memory_chunks', "
            "content_rowid='id', tokenize='unicode61 remove_diacritics 2')"
        )
        op.execute("INSERT INTO memory_chunks_fts(memory_chunks_fts) VALUES ('rebuild')")
        op.execute(
            "CREATE TRIGGER memory_chunks_fts_ai AFTER INSERT ON memory_chunks BEGIN "
            "INSERT INTO memory_chunks_fts(rowid, text) VALUES (new.id, new.text); END"
        )
        op.execute(
            "CREATE TRIGGER memory_chunks_fts_ad AFTER DELETE ON memory_chunks BEGIN INSERT INTO "
            "memory_chunks_fts(memory_chunks_fts, rowid, text) VALUES ('delete', old.id, old.text); END"
        )
        op.execute(
            "CREATE TRIGGER memory_chunks_fts_au AFTER UPDATE OF text ON memory_chunks BEGIN INSERT INTO "
            "memory_chunks_fts(memory_chunks_fts, rowid, text) VALUES ('delete', old.id, old.text); "
            "INSERT INTO memory_chunks_fts(rowid, text) VALUES (new.id, new.text); END"
        )
    with op.batch_alter_table("memory_chunks") as batch:
        batch.drop_column("lex")
