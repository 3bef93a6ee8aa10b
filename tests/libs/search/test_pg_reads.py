"""DirectReads: one autocommit connection outside a pool, against the real PostgreSQL server:
every read sees what other connections committed before it, a connection the server dropped
is reopened, a read blocked by a lock ends in the caller's error, and ``shared`` gives one per
engine."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from goclaw_search.pg_reads import DirectReads, shared

pytestmark = pytest.mark.postgres


class Failed(Exception):
    pass


@pytest.fixture
def engine(pg_schema_url: str) -> Iterator[Any]:
    eng = create_engine(pg_schema_url)
    with eng.begin() as conn:
        conn.execute(text("CREATE TABLE counters (agent_id text PRIMARY KEY, version bigint)"))
    yield eng
    eng.dispose()


def _reads(engine: Any, **timeouts: float) -> DirectReads:
    return DirectReads(engine.dialect.create_connect_args(engine.url), error=Failed, **timeouts)


def test_each_read_sees_what_was_committed_before_it(engine: Any) -> None:
    reads = _reads(engine)
    sql = "SELECT version FROM counters WHERE agent_id = %s"
    assert reads.query(sql, ("a",)) == []
    for version in range(1, 8):  # past psycopg's fifth use: the prepared statement sees it too
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO counters VALUES ('a', :v) ON CONFLICT (agent_id) DO UPDATE SET version = :v"
                ),
                {"v": version},
            )
        assert reads.query(sql, ("a",)) == [(version,)]
    pid = reads.query("SELECT pg_backend_pid() + %(a)s", {"a": 0})[0][0]
    with engine.connect() as conn:  # no transaction left open between reads
        state = conn.execute(text("SELECT state FROM pg_stat_activity WHERE pid = :p"), {"p": pid}).scalar()
    assert state == "idle"
    reads.close()


def test_a_connection_the_server_dropped_is_reopened(engine: Any) -> None:
    reads = _reads(engine)
    pid = reads.query("SELECT pg_backend_pid()", ())[0][0]
    with engine.begin() as conn:
        assert conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid}).scalar()
    assert reads.query("SELECT pg_backend_pid()", ())[0][0] != pid
    reads.close()


def test_a_read_blocked_by_a_lock_raises_the_callers_error_after_the_timeout(engine: Any) -> None:
    reads = _reads(engine, statement_timeout=0.5)
    assert reads.query("SHOW statement_timeout", ()) == [("500ms",)]
    with engine.connect() as blocker:
        blocker.execute(text("LOCK TABLE counters IN ACCESS EXCLUSIVE MODE"))
        outcomes: list[tuple[Any, float]] = []

        def read() -> None:
            start = time.monotonic()
            try:
                outcomes.append((reads.query("SELECT version FROM counters", ()), time.monotonic() - start))
            except Exception as exc:
                outcomes.append((exc, time.monotonic() - start))

        threads = [threading.Thread(target=read) for _ in range(2)]  # one queued behind the other
        for t in threads:
            t.start()
        for t in threads:
            t.join(15)
        blocker.rollback()
    assert len(outcomes) == 2, outcomes
    for exc, seconds in outcomes:
        assert isinstance(exc, Failed) and "within 0.5 s" in str(exc) and seconds < 6, exc
    assert reads.query("SELECT count(*) FROM counters", ()) == [(0,)]  # the same reads answer again
    reads.close()


def test_shared_gives_one_per_engine_and_error(engine: Any, pg_schema_url: str) -> None:
    other = create_engine(pg_schema_url)
    try:
        one = shared(engine, Failed)
        assert shared(engine, Failed) is one
        assert shared(other, Failed) is not one and shared(engine) is not one
        assert one.query("SELECT 1", ()) == [(1,)]
        one.close()
        assert one.query("SELECT 2", ()) == [(2,)]  # closed: the next read opens a new connection
        one.close()
    finally:
        other.dispose()
