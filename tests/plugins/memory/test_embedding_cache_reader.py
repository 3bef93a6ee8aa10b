"""The embedding cache's look-up on SQLite reads through a private connection
(``embedding_cache._reader``). When a PRAGMA fails after the connect (a locked or damaged file),
that connection is closed and the look-up reads through the engine's own session instead, with
nothing raised out of the look-up."""

from __future__ import annotations

import sqlite3
import types
from typing import Any

import numpy as np
import pytest

from goclaw_memory import embedding_cache
from goclaw_memory.embedding_cache import cache_lookup, cache_store


@pytest.fixture
def backend() -> str:
    return "sqlite"


class FailingPragmas:
    """A real connection whose PRAGMAs fail, recording whether it was closed."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.closed = False

    def execute(self, sql: str, *args: Any) -> Any:
        if sql.startswith("PRAGMA"):
            raise sqlite3.OperationalError("database is locked")
        return self.conn.execute(sql, *args)

    def cursor(self) -> Any:
        return self.conn.cursor()

    def close(self) -> None:
        self.closed = True
        self.conn.close()


def test_a_failing_pragma_closes_the_reader_and_the_lookup_falls_back(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng = make_engine()
    space = ("test", "model", 4)
    vec = np.arange(4, dtype=np.float32)
    cache_store(eng, {"a" * 64: vec}, space)
    opened: list[FailingPragmas] = []

    def connect(*args: Any, **kwargs: Any) -> FailingPragmas:
        opened.append(FailingPragmas(sqlite3.connect(*args, **kwargs)))
        return opened[-1]

    fake = types.SimpleNamespace(connect=connect, Error=sqlite3.Error)
    monkeypatch.setattr(embedding_cache, "sqlite3", fake)
    found = cache_lookup(eng, ["a" * 64, "b" * 64], space)
    assert len(opened) == 1 and opened[0].closed
    assert list(found) == ["a" * 64]
    assert np.frombuffer(found["a" * 64], dtype=np.float32).tolist() == vec.tolist()
