"""One autocommit psycopg connection, outside the store's pool, for the small reads every
PostgreSQL memory search makes with the ``inprocess`` backend: the agent's version
token and the winners' rows.

Through the pool each read costs three round trips (the pre-ping on checkout, the query, the
rollback on return): 0.21 ms for the version token and 1.1 ms for 60 rows at 100k chunks,
against 0.03 ms and 0.19 ms here. One connection per engine, shared by threads under a lock
(each read is well under a millisecond), opened on first use, reopened once if the server
dropped it, and closed with the engine.

Never waits forever on a hung server: opening the connection gives up after
``pg_connect_timeout`` seconds, and a read after ``pg_statement_timeout`` (``[plugins.memory]``):
first the server's own ``statement_timeout`` (a lock held by another transaction, an overloaded
server), then, a little later, the client stops waiting (a server or network that no longer
answers at all) and drops the connection. Either way the search fails with a
:class:`~goclaw.errors.StoreError` that says so, and a thread queued behind the lock gives up
within the same time instead of waiting for the one in front.
"""

from __future__ import annotations

import functools
import math
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from goclaw.errors import StoreError

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

CONNECT_TIMEOUT = 10.0  # seconds; the defaults of [plugins.memory] pg_connect_timeout / ...
STATEMENT_TIMEOUT = 10.0  # ... pg_statement_timeout
GRACE = 2.0  # the client waits this much longer than the server's statement_timeout

_DIRECT: weakref.WeakKeyDictionary[Any, DirectConnection] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


class DirectConnection:
    """An autocommit connection to the engine's PostgreSQL database (see the module docstring)."""

    def __init__(
        self,
        engine: Host,
        *,
        connect_timeout: float = CONNECT_TIMEOUT,
        statement_timeout: float = STATEMENT_TIMEOUT,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.statement_timeout = statement_timeout
        # Weakly: this is the value of a dictionary weakly keyed by the engine, and a strong
        # reference would keep an engine dropped without close() (and its pool) alive for good.
        self._engine = weakref.ref(engine)
        self._conn: Any = None
        self._lock = threading.Lock()

    def _connect(self) -> Any:
        engine = self._engine()
        if engine is None:
            raise StoreError("the engine of this connection was closed")
        sa = engine.db.engine
        cargs, cparams = sa.dialect.create_connect_args(sa.url)
        # libpq counts whole seconds, at least 2; psycopg enforces it on the whole connect.
        cparams["connect_timeout"] = max(2, math.ceil(self.connect_timeout))
        conn = _connection_class().connect(*cargs, **cparams, autocommit=True)
        try:
            conn.deadline = time.monotonic() + self.statement_timeout + GRACE
            # set_config, not the URL's "options": those may carry the search_path already.
            ms = str(max(1, round(self.statement_timeout * 1000)))
            conn.execute("SELECT set_config('statement_timeout', %s, false)", (ms,))
            _register_vector(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Run one read-only statement (``%s`` placeholders) and return its rows."""
        return self.queries([(sql, params)])[0]

    def queries(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[tuple[Any, ...]]]:
        """Run read-only statements in one round trip (psycopg's pipeline mode; one statement
        is sent plainly) and return each one's rows."""
        with self._held():
            return self._first(statements, binary=False)

    @contextmanager
    def snapshot(self) -> Iterator[Snapshot]:
        """One read-only REPEATABLE READ transaction on this connection, for reads that must
        agree with each other over several round trips: ``BEGIN`` goes with the first
        :meth:`Snapshot.queries`, ``ROLLBACK`` at the end. Other threads wait meanwhile."""
        with self._held():
            snap = Snapshot(self)
            try:
                yield snap
            finally:
                if snap.begun and self._conn is not None and not self._conn.closed:
                    with self._mapped():
                        self._conn.execute("ROLLBACK")

    @contextmanager
    def _held(self) -> Iterator[None]:
        if not self._lock.acquire(timeout=self.statement_timeout + GRACE):  # the read in front is stuck
            raise self._timed_out()
        try:
            yield
        finally:
            self._lock.release()

    def _first(
        self, statements: Sequence[tuple[str, Sequence[Any]]], *, binary: bool
    ) -> list[list[tuple[Any, ...]]]:
        """Run the statements (the lock held), opening the connection if needed and reopening
        it once if the server dropped it."""
        for attempt in (1, 2):
            try:
                with self._mapped(reraise_dropped=attempt == 2):
                    if self._conn is None or self._conn.closed:
                        self._conn = self._connect()
                    return self._run(statements, binary=binary)
            except _Dropped:
                continue
        raise AssertionError("unreachable")  # pragma: no cover

    def _run(
        self, statements: Sequence[tuple[str, Sequence[Any]]], *, binary: bool
    ) -> list[list[tuple[Any, ...]]]:
        conn = self._conn
        conn.deadline = time.monotonic() + self.statement_timeout + GRACE
        if len(statements) == 1:
            sql, params = statements[0]
            return [conn.execute(sql, params, binary=binary).fetchall()]
        with conn.pipeline() as pipeline:
            cursors = [conn.execute(sql, params, binary=binary) for sql, params in statements]
            pipeline.sync()  # every result in: a cursor without one (BEGIN) has no description
            return [cur.fetchall() if cur.description else [] for cur in cursors]

    @contextmanager
    def _mapped(self, *, reraise_dropped: bool = True) -> Iterator[None]:
        """psycopg's failures as one-line :class:`StoreError` s (a dropped connection: raised
        as :class:`_Dropped` when the caller will reopen it)."""
        import psycopg

        try:
            yield
        except psycopg.errors.QueryCanceled:  # the server's statement_timeout
            raise self._timed_out() from None
        except psycopg.errors.ConnectionTimeout as exc:
            self._drop()
            raise StoreError(
                f"database unreachable: no connection within {self.connect_timeout:g} s "
                f"(plugins.memory.pg_connect_timeout): {_first_line(exc)}"
            ) from None
        except psycopg.OperationalError as exc:
            self._drop()
            if _client_timeout(exc):  # no answer at all: the connection is unusable
                raise self._timed_out() from None
            if not reraise_dropped:
                raise _Dropped() from None
            raise StoreError(f"database unreachable: {_first_line(exc)}") from None

    def _timed_out(self) -> StoreError:
        return StoreError(
            f"the database did not answer a memory search read within {self.statement_timeout:g} s "
            "(plugins.memory.pg_statement_timeout)"
        )

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # pragma: no cover - closing a broken connection
                pass

    def close(self) -> None:
        engine = self._engine()
        with _LOCK:
            if engine is not None and _DIRECT.get(engine) is self:
                del _DIRECT[engine]
        with self._lock:
            self._drop()


class _Dropped(Exception):
    """The server dropped the connection (reopened once)."""


class Snapshot:
    """The reads of one :meth:`DirectConnection.snapshot`."""

    def __init__(self, owner: DirectConnection) -> None:
        self.owner = owner
        self.begun = False

    def queries(
        self, statements: Sequence[tuple[str, Sequence[Any]]], *, binary: bool = False, last: bool = False
    ) -> list[list[tuple[Any, ...]]]:
        """Run read-only statements in one round trip and return each one's rows (``binary``:
        results in PostgreSQL's binary format, e.g. ``bytea`` without hex text; ``last``: the
        snapshot's last reads, its ``ROLLBACK`` sent with them)."""
        end = [("ROLLBACK", ())] if last else []
        if not self.begun:
            begin = ("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", ())
            out = self.owner._first([begin, *statements, *end], binary=binary)[1:]
            self.begun = not last
            return out[: len(statements)]
        with self.owner._mapped():
            out = self.owner._run([*statements, *end], binary=binary)
        self.begun = not last
        return out[: len(statements)]


def _register_vector(conn: Any) -> None:
    """pgvector's binary adapters, so query vectors travel as float32 (when the extension is
    there)."""
    from psycopg.types import TypeInfo

    info = TypeInfo.fetch(conn, "vector")
    if info is not None:
        from pgvector.psycopg.vector import register_vector_info

        register_vector_info(conn, info)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _client_timeout(exc: BaseException) -> bool:
    import psycopg

    waited = getattr(psycopg.errors, "_WaitTimeout", None)  # what Connection.wait raises
    return waited is not None and isinstance(exc, waited)


@functools.cache
def _connection_class() -> Any:
    """A psycopg connection whose every wait for the server ends at ``deadline``: psycopg
    passes ``timeout`` to :meth:`psycopg.Connection.wait` only for its own waits, so a read
    would otherwise wait on the socket for as long as the server stays silent (``wait`` takes
    ``timeout`` since psycopg 3.3.6, the pinned minimum)."""
    import psycopg

    class DeadlineConnection(psycopg.Connection[Any]):
        deadline: float | None = None

        def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
            if timeout is None and self.deadline is not None:
                timeout = max(self.deadline - time.monotonic(), 0.001)
            return super().wait(gen, interval, timeout)

    return DeadlineConnection


def direct(engine: Host) -> DirectConnection:
    """The engine's :class:`DirectConnection` (created on first use, closed with the engine),
    with the timeouts of ``[plugins.memory]``."""
    with _LOCK:
        conn = _DIRECT.get(engine)
        if conn is None:
            from goclaw.contracts.host import settings_or_defaults
            from goclaw_memory.settings import MemorySettings

            cfg = settings_or_defaults(engine, "memory", MemorySettings)
            conn = _DIRECT[engine] = DirectConnection(
                engine, connect_timeout=cfg.pg_connect_timeout, statement_timeout=cfg.pg_statement_timeout
            )
            engine.on_close(conn.close)
            weakref.finalize(engine, conn.close)  # dropped without close(): close it anyway
        return conn
