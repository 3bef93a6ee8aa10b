"""DirectReads: one autocommit connection outside a pool, against the real PostgreSQL server:
every read sees what other connections committed before it, a connection the server dropped
is reopened, a read blocked by a lock, a server that stops answering and one that never
completes the connection each end in the caller's error, and ``shared`` gives one per
engine."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from goclaw_search import pg_reads
from goclaw_search.pg_reads import DirectReads, shared


class Failed(Exception):
    pass


@pytest.fixture
def engine(pg_schema_url: str) -> Iterator[Any]:
    eng = create_engine(pg_schema_url)
    with eng.begin() as conn:
        conn.execute(text("CREATE TABLE counters (agent_id text PRIMARY KEY, version bigint)"))
    yield eng
    eng.dispose()


def _timed(fn: Any) -> tuple[Any, float]:
    """What ``fn()`` returned or raised, and after how many seconds."""
    start = time.monotonic()
    try:
        return fn(), time.monotonic() - start
    except Exception as exc:
        return exc, time.monotonic() - start


def _reads(engine: Any, **timeouts: float) -> DirectReads:
    return DirectReads(engine.dialect.create_connect_args(engine.url), error=Failed, **timeouts)


@pytest.mark.postgres
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


@pytest.mark.postgres
def test_a_connection_the_server_dropped_is_reopened(engine: Any) -> None:
    reads = _reads(engine)
    pid = reads.query("SELECT pg_backend_pid()", ())[0][0]
    with engine.begin() as conn:
        assert conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid}).scalar()
    assert reads.query("SELECT pg_backend_pid()", ())[0][0] != pid
    reads.close()


@pytest.mark.postgres
def test_a_read_blocked_by_a_lock_raises_the_callers_error_after_the_timeout(engine: Any) -> None:
    reads = _reads(engine, statement_timeout=0.5)
    assert reads.query("SHOW statement_timeout", ()) == [("500ms",)]
    with engine.connect() as blocker:
        blocker.execute(text("LOCK TABLE counters IN ACCESS EXCLUSIVE MODE"))
        outcomes: list[tuple[Any, float]] = []

        def read() -> None:
            outcomes.append(_timed(lambda: reads.query("SELECT version FROM counters", ())))

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


@pytest.mark.postgres
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


@pytest.mark.postgres
def test_a_server_that_stops_answering_does_not_hang_the_read(
    engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's own statement_timeout cannot fire in a process that does not run: the
    client gives up a little after ``statement_timeout``, drops the connection and opens a new
    one for the next read."""
    monkeypatch.setattr(pg_reads, "GRACE", 0.5)
    reads = _reads(engine, statement_timeout=0.5)
    pid = reads.query("SELECT pg_backend_pid()", ())[0][0]
    try:  # the server process serving this connection, when it runs on this machine
        if b"postgres" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            raise OSError
        os.kill(pid, signal.SIGSTOP)
    except OSError:
        pytest.skip("the server's processes cannot be paused from here")
    outcome: list[tuple[Any, float]] = []
    thread = threading.Thread(target=lambda: outcome.append(_timed(lambda: reads.query("SELECT 1", ()))))
    thread.start()
    thread.join(10)
    os.kill(pid, signal.SIGCONT)  # a read still waiting (the defect) ends now
    thread.join(10)
    assert outcome and outcome[0][1] < 4, f"the read waited {outcome[0][1] if outcome else 10:.1f} s"
    exc, seconds = outcome[0]
    assert isinstance(exc, Failed) and "did not answer a read within 0.5 s" in str(exc), exc
    assert seconds > 0.9  # statement_timeout + GRACE
    assert reads.query("SELECT 2", ()) == [(2,)]
    reads.close()


def test_a_server_that_never_completes_the_connection_fails_after_the_connect_timeout() -> None:
    silent = socket.create_server(("127.0.0.1", 0))  # accepts, never says a word
    try:
        port = silent.getsockname()[1]
        reads = DirectReads(
            ((), {"host": "127.0.0.1", "port": port, "dbname": "x", "user": "x"}), error=Failed
        )
        reads.connect_timeout = 2
        exc, seconds = _timed(lambda: reads.query("SELECT 1", ()))
        assert isinstance(exc, Failed) and str(exc).startswith(
            "database unreachable: no connection within 2 s"
        )
        assert seconds < 6, exc
    finally:
        silent.close()


@pytest.mark.postgres
def test_sent_statements_run_while_the_caller_works(engine: Any) -> None:
    """``sent``: the server runs the statements before their rows are asked for (another
    connection sees them running), and the rows are those of ``queries``."""
    reads, watcher = _reads(engine), _reads(engine)
    pid = reads.query("SELECT pg_backend_pid()", ())[0][0]
    seen = "SELECT state, query FROM pg_stat_activity WHERE pid = %s"
    with reads.sent([("SELECT 1", ()), ("SELECT pg_sleep(0.5), %s::int", (7,))]) as rows:
        deadline = time.monotonic() + 5
        while watcher.query(seen, (pid,))[0][0] != "active" and time.monotonic() < deadline:
            time.sleep(0.01)
        state, sql = watcher.query(seen, (pid,))[0]
        assert state == "active" and "pg_sleep" in sql
        assert rows() == [[(1,)], [("", 7)]]
        assert rows() == [[(1,)], [("", 7)]]  # asked twice: the same rows, nothing run again
    assert reads.query("SELECT pg_backend_pid()", ())[0][0] == pid  # the connection is reused
    reads.close()
    watcher.close()


@pytest.mark.postgres
def test_sent_rows_never_asked_for_leave_a_usable_reader(engine: Any) -> None:
    reads = _reads(engine)
    pid = reads.query("SELECT pg_backend_pid()", ())[0][0]
    with pytest.raises(ZeroDivisionError), reads.sent([("SELECT pg_sleep(0.2)", ())]):
        raise ZeroDivisionError  # the caller failed before asking for the rows
    assert reads.query("SELECT 41 + 1", ()) == [(42,)]  # on a new connection: results were pending
    assert reads.query("SELECT pg_backend_pid()", ())[0][0] != pid
    with (
        reads.sent([("SELECT no_such_column FROM counters", ())]) as rows,
        pytest.raises(Exception, match="no_such_column"),
    ):
        rows()
    assert reads.query("SELECT 2 * 21", ()) == [(42,)]
    reads.close()


@pytest.mark.postgres
def test_sent_reopens_a_connection_the_server_dropped(engine: Any) -> None:
    reads = _reads(engine)
    pid = reads.query("SELECT pg_backend_pid()", ())[0][0]
    with engine.begin() as conn:
        assert conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid}).scalar()
    with reads.sent([("SELECT pg_backend_pid()", ())]) as rows:
        assert rows()[0][0][0] != pid
    reads.close()


@pytest.mark.postgres
def test_sent_gives_up_after_the_statement_timeout(engine: Any) -> None:
    reads = _reads(engine, statement_timeout=0.3)
    with reads.sent([("SELECT pg_sleep(5)", ())]) as rows:
        outcome, seconds = _timed(rows)
    assert isinstance(outcome, Failed) and "within 0.3 s" in str(outcome) and seconds < 4, outcome
    assert reads.query("SELECT 1", ()) == [(1,)]
    reads.close()


def test_an_int_array_literal_is_read_by_the_server_as_the_list(engine: Any) -> None:
    """``int_array`` passes a batch of ids as one string the statement casts: the server reads
    the same numbers (numpy integers too), an empty list as an empty array."""
    import numpy as np

    reads = _reads(engine)
    values = [7, -3, 2**40, *np.array([5, 9], dtype=np.int64)]
    got = reads.query("SELECT %s::text::int8[]", (pg_reads.int_array(values),))
    assert got == [([7, -3, 2**40, 5, 9],)]
    assert reads.query("SELECT cardinality(%s::text::int8[])", (pg_reads.int_array([]),)) == [(0,)]
