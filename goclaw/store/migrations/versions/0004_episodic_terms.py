"""Episodic summaries carry the retrieval engine's terms

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03 05:00:00

``episodic_summaries.lex`` holds the terms (:mod:`goclaw_search.tokenize`) of the summary,
its L0 abstract and its key topics, space separated; existing rows are backfilled here.

* SQLite: episodic search moves to the retrieval engine's in-memory index (built from
  ``lex``), like memory chunks in 0003; the FTS5 table and its triggers are dropped.
* PostgreSQL: ``tsv`` is generated from ``lex`` verbatim, so full text stays in the database
  with the engine's stemming and whole codes.

Now that feature tables are their plugins', this only runs where ``episodic_summaries`` exists
(a database created before the split); the episodic plugin's own chain creates the table with
``lex`` otherwise.
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

BATCH = 1000
PG_TSV = (
    "ALTER TABLE episodic_summaries ADD COLUMN tsv tsvector GENERATED ALWAYS AS "
    "(array_to_tsvector(array_remove(string_to_array(coalesce(lex, ''), ' '), ''))) STORED"
)
OLD_SOURCE = "coalesce(summary, '') || ' ' || coalesce(l0_abstract, '')"
SQLITE_FTS = [
    "CREATE VIRTUAL TABLE episodic_summaries_fts USING fts5(summary, l0_abstract, "
    "content='episodic_summaries', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2')",
    "INSERT INTO episodic_summaries_fts(episodic_summaries_fts) VALUES ('rebuild')",
    "CREATE TRIGGER episodic_fts_ai AFTER INSERT ON episodic_summaries BEGIN "
    "INSERT INTO episodic_summaries_fts(rowid, summary, l0_abstract) "
    "VALUES (new.rowid, new.summary, new.l0_abstract); END",
    "CREATE TRIGGER episodic_fts_ad AFTER DELETE ON episodic_summaries BEGIN "
    "INSERT INTO episodic_summaries_fts(episodic_summaries_fts, rowid, summary, l0_abstract) "
    "VALUES ('delete', old.rowid, old.summary, old.l0_abstract); END",
    "CREATE TRIGGER episodic_fts_au AFTER UPDATE OF summary, l0_abstract ON episodic_summaries BEGIN "
    "INSERT INTO episodic_summaries_fts(episodic_summaries_fts, rowid, summary, l0_abstract) "
    "VALUES ('delete', old.rowid, old.summary, old.l0_abstract); "
    "INSERT INTO episodic_summaries_fts(rowid, summary, l0_abstract) "
    "VALUES (new.rowid, new.summary, new.l0_abstract); END",
]


def episode_lex(summary: str, l0_abstract: str, key_topics: object) -> str:
    """The stored terms of one summary (the same text goclaw_episodic indexes)."""
    from goclaw_search.tokenize import default_tokenizer

    if isinstance(key_topics, str):
        try:
            key_topics = json.loads(key_topics)
        except ValueError:
            key_topics = [key_topics]
    topics = [str(t) for t in key_topics] if isinstance(key_topics, list) else []
    text = "\n".join([summary or "", l0_abstract or "", " ".join(topics)])
    return " ".join(default_tokenizer().terms(text))


def _backfill() -> None:
    conn = op.get_bind()
    last = ""
    while True:
        rows = conn.execute(
            sa.text(
                "SELECT id, summary, l0_abstract, key_topics FROM episodic_summaries "
                "WHERE id > :last ORDER BY id LIMIT :n"
            ),
            {"last": last, "n": BATCH},
        ).all()
        if not rows:
            return
        conn.execute(
            sa.text("UPDATE episodic_summaries SET lex = :lex WHERE id = :id"),
            [{"id": r[0], "lex": episode_lex(r[1], r[2], r[3])} for r in rows],
        )
        last = str(rows[-1][0])


def upgrade() -> None:
    existing = sa.inspect(op.get_bind())
    if not existing.has_table("episodic_summaries", existing.default_schema_name):
        return
    pg = op.get_bind().dialect.name == "postgresql"
    op.add_column("episodic_summaries", sa.Column("lex", sa.Text(), nullable=True))
    if pg:
        op.execute("DROP INDEX IF EXISTS ix_episodic_summaries_tsv")
        op.execute("ALTER TABLE episodic_summaries DROP COLUMN IF EXISTS tsv")
    else:
        for name in ("episodic_fts_ai", "episodic_fts_ad", "episodic_fts_au"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS episodic_summaries_fts")
    _backfill()
    if pg:
        op.execute(PG_TSV)
        op.execute("CREATE INDEX ix_episodic_summaries_tsv ON episodic_summaries USING GIN (tsv)")


def downgrade() -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    if pg:
        op.execute("DROP INDEX IF EXISTS ix_episodic_summaries_tsv")
        op.execute("ALTER TABLE episodic_summaries DROP COLUMN IF EXISTS tsv")
    with op.batch_alter_table("episodic_summaries") as batch:  # SQLite: recreates the table
        batch.drop_column("lex")
    if pg:
        op.execute(
            "ALTER TABLE episodic_summaries ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector("
            f"'simple', regexp_replace({OLD_SOURCE}, '[-_/.:@]+', ' ', 'g'))) STORED"
        )
        op.execute("CREATE INDEX ix_episodic_summaries_tsv ON episodic_summaries USING GIN (tsv)")
    else:  # after the table is recreated: its triggers would not survive it
        for statement in SQLITE_FTS:
            op.execute(statement)
