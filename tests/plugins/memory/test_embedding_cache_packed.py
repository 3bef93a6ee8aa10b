"""The embedding cache's SQLite look-up reads each query's vectors as one packed row (hashes,
the vectors' bytes end to end and their lengths, joined by SQLite): the same vectors as one
row per hit, for hits, misses, empty embeddings and other models alike, and row by row when
a hash would not split back (it holds a comma)."""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np
import pytest

from goclaw_memory import embedding_cache
from goclaw_memory.embedding_cache import _packed, _per_query, cache_lookup, cache_store


@pytest.fixture
def backend() -> str:
    return "sqlite"


def _rows(eng: Any, space: tuple[str, str, int], hashes: list[str]) -> dict[str, bytes]:
    with eng.db.engine.connect() as c:
        cur = c.connection.cursor()
        got = {}
        for h in hashes:
            row = cur.execute(
                "SELECT embedding FROM embedding_cache WHERE provider = ? AND model = ? AND dim = ? "
                "AND chunk_hash = ? AND embedding IS NOT NULL",
                (*space, h),
            ).fetchone()
            if row is not None:
                got[h] = bytes(row[0])
        return got


def test_packed_lookups_give_the_vectors_row_lookups_give(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng = make_engine()
    space, other = ("test", "m", 8), ("test", "other", 8)
    rng = np.random.default_rng(1)
    stored = {f"{i:064x}": rng.standard_normal(8).astype(np.float32) for i in range(3_000)}
    stored["00ff" * 16] = np.frombuffer(b"\x00,\n\r" * 8, dtype=np.float32)  # separators in the bytes
    cache_store(eng, stored, space)
    cache_store(eng, {f"{i:064x}": np.ones(8, dtype=np.float32) for i in range(3_000, 3_100)}, other)
    with eng.db.engine.begin() as c:  # a cached row without a vector is no hit
        c.exec_driver_sql("UPDATE embedding_cache SET embedding = NULL WHERE chunk_hash = ?", (f"{7:064x}",))
    monkeypatch.setattr(embedding_cache, "PACKED_CHUNK", 700)  # several queries, a short last one
    asked = sorted([*stored, *(f"{i:064x}" for i in range(3_000, 3_200))])
    got = cache_lookup(eng, asked, space)
    want = _rows(eng, space, asked)
    assert len(want) == 3_000 and f"{7:064x}" not in want
    assert {h: bytes(v) for h, v in got.items()} == want
    assert bytes(got["00ff" * 16]) == b"\x00,\n\r" * 8


def test_a_hash_holding_a_comma_is_read_row_by_row(make_engine: Any) -> None:
    eng = make_engine()
    space = ("test", "m", 4)
    cache_store(eng, {"a,b": np.arange(4, dtype=np.float32), "c": np.ones(4, dtype=np.float32)}, space)
    with eng.db.engine.connect() as c:
        got = dict(_packed(c.connection.cursor(), space, ["a,b", "c", "zz"]))
    assert got == {
        "a,b": np.arange(4, dtype=np.float32).tobytes(),
        "c": np.ones(4, dtype=np.float32).tobytes(),
    }


def test_hashes_per_query_follow_sqlites_parameter_limit() -> None:
    conn = sqlite3.connect(":memory:")
    assert _per_query(conn) == min(
        embedding_cache.PACKED_CHUNK, conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) - 3
    )
    conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)  # an old SQLite's limit
    assert _per_query(conn) == 996
    conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 100)
    assert _per_query(conn) == 97  # never more than it takes
    conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 2_000)
    assert _per_query(conn) == 1_997


def test_vectors_of_the_space_come_as_rows_of_one_array(make_engine: Any) -> None:
    """No bytes object per vector: a query's vectors are read-only float32 rows over its one
    packed buffer; one of another size stays bytes."""
    eng = make_engine()
    space = ("test", "m", 4)
    cache_store(eng, {h: np.full(4, i, dtype=np.float32) for i, h in enumerate("abc")}, space)
    with eng.db.engine.connect() as c:
        got = dict(_packed(c.connection.cursor(), space, ["a", "b", "c"]))
        with eng.db.engine.begin() as w:  # a stored vector of the wrong size for its space
            w.exec_driver_sql(
                "UPDATE embedding_cache SET embedding = ? WHERE chunk_hash = 'c'", (b"\x00" * 8,)
            )
        mixed = dict(_packed(c.connection.cursor(), space, ["a", "b", "c"]))
    rows = [got[h] for h in "abc"]
    assert all(isinstance(r, np.ndarray) and r.dtype == np.float32 and r.shape == (4,) for r in rows)
    assert [r.tolist() for r in rows] == [[float(i)] * 4 for i in range(3)]
    assert rows[0].base is rows[1].base is rows[2].base and not rows[0].flags.writeable
    assert {h: bytes(v) for h, v in mixed.items()} == {
        "a": np.zeros(4, dtype=np.float32).tobytes(),
        "b": np.ones(4, dtype=np.float32).tobytes(),
        "c": b"\x00" * 8,
    }
