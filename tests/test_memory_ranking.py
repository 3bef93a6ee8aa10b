"""The SQLite backend's own bm25 (used to score the vector channel's candidates) must equal
FTS5's ``bm25()`` exactly, including FTS5's tokenization of Unicode, digits and underscores."""

from __future__ import annotations

import sqlite3

import pytest

from goclaw_memory.backends import _fts5_totals, _varint, bm25_score

DOCS = [
    "The café on Rue Saint-Honoré serves crème brûlée.",
    "Cafe opening hours: 08:00-17:00, closed on Sundays.",
    "deploy_script.sh deploys build 4471 to the staging cluster",
    "Deploy, deploy, deploy: the build pipeline deploys nightly.",
    "Ünïcödé text with NAÏVE accents and ß and Ωmega.",
    "Nothing relevant here at all, only filler words and more filler.",
    "naive cafe deploy 4471 script",
]


@pytest.fixture
def fts() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE memory_chunks (id INTEGER PRIMARY KEY, text TEXT)")
    db.execute(
        "CREATE VIRTUAL TABLE memory_chunks_fts USING fts5(text, content='memory_chunks', "
        "content_rowid='id', tokenize='unicode61 remove_diacritics 2')"
    )
    for i, body in enumerate(DOCS, start=1):
        db.execute("INSERT INTO memory_chunks (id, text) VALUES (?, ?)", (i, body))
        db.execute("INSERT INTO memory_chunks_fts (rowid, text) VALUES (?, ?)", (i, body))
    db.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, memory_chunks_fts, row)")
    return db


class _Conn:
    """The two calls _fts5_totals makes on a SQLAlchemy connection, over sqlite3."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def begin_nested(self) -> _Conn:
        return self

    def __enter__(self) -> _Conn:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def exec_driver_sql(self, sql: str) -> _Conn:
        self.cursor = self.db.execute(sql)
        return self

    def first(self) -> object:
        return self.cursor.fetchone()


@pytest.mark.parametrize(
    "terms",
    [
        ["cafe"],
        ["café", "creme"],
        ["deploy"],
        ["deploy", "4471", "script"],
        ["naive", "unicode"],
        ["ωmega", "ß"],
    ],
)
def test_python_bm25_equals_fts5(fts: sqlite3.Connection, terms: list[str]) -> None:
    totals = _fts5_totals(_Conn(fts))
    assert totals is not None
    n_rows, n_tokens = totals
    assert n_rows == len(DOCS)
    folded = sorted({t.replace("é", "e") for t in terms})
    marks = ",".join("?" * len(folded))
    freq = dict(fts.execute(f"SELECT term, doc FROM temp.v WHERE term IN ({marks})", folded))
    match = " OR ".join(f'"{t}"' for t in terms)
    expected = {
        rowid: -score
        for rowid, score in fts.execute(
            "SELECT rowid, bm25(memory_chunks_fts) FROM memory_chunks_fts WHERE memory_chunks_fts MATCH ?",
            (match,),
        )
    }
    assert expected, "the query should match something"
    for rowid, body in enumerate(DOCS, start=1):
        got = bm25_score(body, terms, freq, n_rows, n_tokens / n_rows)
        assert got == pytest.approx(expected.get(rowid, 0.0), rel=1e-12, abs=1e-12), (rowid, body)


def test_varint_decoding() -> None:
    assert _varint(bytes([0x05]), 0) == (5, 1)
    assert _varint(bytes([0x86, 0x8D, 0x20]), 0) == (100_000, 3)
    assert _varint(bytes([0xFF] * 8 + [0x01]), 0) == ((1 << 64) - 255, 9)  # ninth byte: 8 bits
