"""The per-search reads on PostgreSQL (``pg_direct``) of both backends, ``postgresql`` (the
default) and ``inprocess``, never wait forever:
a lock held by another transaction, a server that stops answering mid-session and one that never
finishes the connection each end in a clear :class:`StoreError` within the configured timeouts
(``[plugins.memory] pg_statement_timeout`` / ``pg_connect_timeout``), against the real server."""

from __future__ import annotations

import gc
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, make_url, text

from goclaw.errors import StoreError
from tests.memory_helpers import write

pytestmark = pytest.mark.postgres


def _outcome(fn: Callable[[], Any], wait: float) -> tuple[str, Any, float]:
    """Run ``fn`` in a thread: ("returned" | "raised", value, seconds), or ("hung", None, wait)."""
    box: list[tuple[str, Any, float]] = []
    start = time.monotonic()

    def run() -> None:
        try:
            box.append(("returned", fn(), time.monotonic() - start))
        except Exception as exc:
            box.append(("raised", exc, time.monotonic() - start))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(wait)
    return box[0] if box else ("hung", None, wait)


@pytest.fixture(autouse=True)
def _nothing_else_reported(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """A failed read reports its one error and nothing else: no warning from the driver about a
    pipeline left on a connection that had to be closed (psycopg logs one when such a pipeline
    is garbage-collected: collected here, within the test)."""
    yield
    gc.collect()
    assert not [r.getMessage() for r in caplog.records if r.name.startswith("psycopg")]


@pytest.fixture(params=["postgresql", "inprocess"])
def eng(
    request: pytest.FixtureRequest, pg_schema_url: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    from goclaw.engine import Engine

    monkeypatch.setenv("GOCLAW_PLUGINS__MEMORY__BACKEND", request.param)
    monkeypatch.setenv("GOCLAW_PLUGINS__MEMORY__PG_STATEMENT_TIMEOUT", "0.5")
    eng = Engine.open(workspace, pg_schema_url)
    eng.agents.create("ada")
    write(Path(eng.agent_dir(eng.agents.get("ada"))), "memory/ferry.md", "The ferry leaves at noon.\n")
    eng.memory.index("ada")
    assert eng.memory.backend.name == request.param
    assert eng.memory.search("ferry", "ada")[0].path == "memory/ferry.md"
    yield eng
    eng.close()


def test_a_search_blocked_by_a_lock_fails_clearly_instead_of_waiting(eng: Any) -> None:
    """Another transaction holds a table every search reads locked (a migration, a long
    maintenance statement): the packed postings (``postgresql``), the version tokens
    (``inprocess``). Every search, including one queued behind the first on the shared
    connection, fails after about ``pg_statement_timeout`` with an error naming the setting;
    once the lock is gone the same connection answers again."""
    table = "memory_packed" if eng.memory.backend.name == "postgresql" else "worker_state"
    with eng.db.engine.connect() as blocker:
        blocker.execute(text(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"))
        results: list[tuple[str, Any, float]] = []

        def search() -> None:
            results.append(_outcome(lambda: eng.memory.search("ferry", "ada"), 12))

        threads = [threading.Thread(target=search) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        blocker.rollback()
    assert [r[0] for r in results] == ["raised", "raised"], results
    for _, exc, seconds in results:
        assert isinstance(exc, StoreError) and "pg_statement_timeout" in str(exc), exc
        assert "within 0.5 s" in str(exc) and seconds < 6
    assert eng.memory.search("ferry", "ada")[0].path == "memory/ferry.md"


class _Proxy:
    """A TCP relay to the real PostgreSQL that can stop relaying: a server (or the network to
    it) that accepts bytes and never answers."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.frozen = False
        self._stop = False
        self._socks: list[socket.socket] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self._socks += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        peer = {a: b, b: a}
        try:
            while not self._stop:
                ready, _, _ = select.select([a, b], [], [], 0.05)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    if not self.frozen:  # frozen: swallowed, never answered
                        peer[s].sendall(data)
        except OSError:
            return

    def close(self) -> None:
        self._stop = True
        self.listener.close()
        for s in self._socks:
            s.close()


class _EngineVia:
    """What :class:`DirectConnection` reads of an engine, its URL pointing at the proxy."""

    def __init__(self, url: str) -> None:
        self.db = type("Db", (), {"engine": create_engine(url)})()


@pytest.fixture
def proxied(pg_schema_url: str) -> Iterator[tuple[_Proxy, _EngineVia]]:
    url = make_url(pg_schema_url)
    proxy = _Proxy(url.host or "127.0.0.1", url.port or 5432)
    via = _EngineVia(url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False))
    yield proxy, via
    via.db.engine.dispose()
    proxy.close()


def test_a_server_that_stops_answering_mid_session_does_not_hang_the_search(
    proxied: tuple[_Proxy, _EngineVia], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's own statement_timeout cannot fire when nothing reaches the server: the client
    gives up a little after ``pg_statement_timeout``, drops the connection and opens a new one
    for the next read."""
    from goclaw_memory import pg_direct
    from goclaw_search import pg_reads

    monkeypatch.setattr(pg_reads, "GRACE", 0.5)
    proxy, via = proxied
    conn = pg_direct.DirectConnection(via, connect_timeout=2, statement_timeout=0.5)  # type: ignore[arg-type]
    assert conn.query("SELECT 1", ()) == [(1,)]
    proxy.frozen = True
    state, exc, seconds = _outcome(lambda: conn.query("SELECT 2", ()), 15)
    assert state == "raised", (state, exc)
    assert isinstance(exc, StoreError) and "pg_statement_timeout" in str(exc), exc
    assert 0.9 < seconds < 4  # statement_timeout + GRACE, not the server's own (nothing reached it)
    proxy.frozen = False
    assert conn.query("SELECT 3", ()) == [(3,)]
    conn.close()


def test_a_server_that_never_completes_the_connection_fails_after_the_connect_timeout(
    proxied: tuple[_Proxy, _EngineVia],
) -> None:
    from goclaw_memory.pg_direct import DirectConnection

    proxy, via = proxied
    proxy.frozen = True
    conn = DirectConnection(via, connect_timeout=2, statement_timeout=1)  # type: ignore[arg-type]
    state, exc, seconds = _outcome(lambda: conn.query("SELECT 1", ()), 15)
    assert state == "raised", (state, exc)
    assert isinstance(exc, StoreError) and "pg_connect_timeout" in str(exc), exc
    assert str(exc).startswith("database unreachable") and seconds < 6


def test_the_timeouts_are_memory_settings(eng: Any) -> None:
    from goclaw_memory.pg_direct import direct

    conn = direct(eng)
    assert (conn.statement_timeout, conn.connect_timeout) == (0.5, 10.0)
    assert conn.query("SHOW statement_timeout", ()) == [("500ms",)]


def test_each_thread_searches_on_its_own_connection(eng: Any) -> None:
    """Threads of one process (a server's workers) do not queue on one connection: each gets its
    own, held open while the thread is alive, and every one closes with the engine."""
    import threading

    from goclaw_memory.pg_direct import direct

    mine = direct(eng)
    assert direct(eng) is mine
    theirs: list[Any] = []
    started = threading.Barrier(2)

    def other() -> None:
        started.wait()
        conn = direct(eng)
        conn.query("SELECT 1", ())
        theirs.append(conn)

    thread = threading.Thread(target=other)
    thread.start()
    started.wait()
    mine.query("SELECT 1", ())
    thread.join()
    assert theirs and theirs[0] is not mine
    pids = {c.query("SELECT pg_backend_pid()", ())[0][0] for c in (mine, theirs[0])}
    assert len(pids) == 2
    eng.close()
    assert mine._conn is None and theirs[0]._conn is None
