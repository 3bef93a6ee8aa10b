"""Small PostgreSQL reads outside a connection pool: for an in-memory index kept in step with
tables (the memory tiers' indexes), one round trip to read an agent's change counter instead
of a pool checkout, its pre-ping, ``BEGIN``, the read and ``ROLLBACK``.

A :class:`DirectReads` is one autocommit psycopg connection, shared by threads under a lock
(each read is well under a millisecond), opened on first use and reopened once if the server
dropped it. An autocommit statement sees every transaction committed before it starts, so a
write by any process is seen by the next read. No transaction stays open; psycopg prepares a
statement on its fifth use, as on the store's own connections (half the time of a statement
with subqueries).

It never waits forever on a hung server: opening the connection gives up after
``connect_timeout`` seconds, and a read after ``statement_timeout``: first the server's own
``statement_timeout`` (a lock held by another transaction, an overloaded server), then,
``GRACE`` seconds later, the client stops waiting (a server or network that no longer answers
at all) and drops the connection. Either way the read raises ``error`` (a one-line message),
and a thread queued behind the lock gives up within the same time.

:func:`shared` gives one per SQLAlchemy engine (so several tiers of one process share one
server connection); its owner closes it with :meth:`DirectReads.close`.
"""

from __future__ import annotations

import functools
import math
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = ["DirectReads", "int_array", "shared"]

CONNECT_TIMEOUT = 10.0  # seconds
STATEMENT_TIMEOUT = 10.0
GRACE = 2.0  # the client waits this much longer than the server's statement_timeout

_SHARED: weakref.WeakKeyDictionary[Any, dict[Any, DirectReads]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


class DirectReads:
    """An autocommit connection (see the module docstring). ``connect``: psycopg's connect
    arguments (positional, keywords), for instance SQLAlchemy's
    ``dialect.create_connect_args(url)``; ``error``: the exception class a failed read raises;
    ``settings``: the names of the two timeouts' settings, for the messages (if any);
    ``session``: more server settings (name, value) for the connection's session."""

    def __init__(
        self,
        connect: tuple[Sequence[Any], dict[str, Any]],
        *,
        error: Callable[[str], Exception] = ConnectionError,
        connect_timeout: float = CONNECT_TIMEOUT,
        statement_timeout: float = STATEMENT_TIMEOUT,
        settings: tuple[str, str] = ("", ""),
        session: Sequence[tuple[str, str]] = (),
    ) -> None:
        self._args, self._kwargs = tuple(connect[0]), dict(connect[1])
        self._session = tuple(session)
        self._error = error
        self.connect_timeout = connect_timeout
        self.statement_timeout = statement_timeout
        self._settings = tuple(f" ({name})" if name else "" for name in settings)
        self._conn: Any = None
        self._block: Any = None  # the connection's pipeline block while one is open
        self._lock = threading.Lock()

    def _connect(self) -> Any:
        # libpq counts whole seconds, at least 2; psycopg enforces it on the whole connect.
        kwargs = {**self._kwargs, "connect_timeout": max(2, math.ceil(self.connect_timeout))}
        conn = _connection_class().connect(*self._args, **kwargs, autocommit=True)
        try:
            conn.deadline = time.monotonic() + self.statement_timeout + GRACE
            # set_config, not the connection's "options": those may carry the search_path already.
            ms = str(max(1, round(self.statement_timeout * 1000)))
            conn.execute("SELECT set_config('statement_timeout', %s, false)", (ms,))
            for name, value in self._session:
                conn.execute("SELECT set_config(%s, %s, false)", (name, value))
            _register_vector(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def query(
        self, sql: str, params: Sequence[Any] | dict[str, Any], *, binary: bool = False
    ) -> list[tuple[Any, ...]]:
        """Run one read-only statement (``%s`` or ``%(name)s`` placeholders); its rows."""
        return self.queries([(sql, params)], binary=binary)[0]

    def queries(
        self, statements: Sequence[tuple[str, Sequence[Any] | dict[str, Any]]], *, binary: bool = False
    ) -> list[list[tuple[Any, ...]]]:
        """Run read-only statements in one round trip (psycopg's pipeline mode; one statement
        is sent plainly) and return each one's rows (``binary``: in PostgreSQL's binary format,
        e.g. ``bytea`` without hex text)."""
        with self._held():
            return self._first(statements, binary=binary)

    @contextmanager
    def sent(
        self, statements: Sequence[tuple[str, Sequence[Any] | dict[str, Any]]], *, binary: bool = False
    ) -> Iterator[Callable[[], list[list[tuple[Any, ...]]]]]:
        """Send read-only statements now and give a function returning their rows (as
        :meth:`queries`): the server runs them while the caller does other work, such as
        another connection's reads. The connection stays this block's until it ends; rows not
        asked for by then are dropped with the connection (reopened by the next read)."""
        with self._held():
            pending: Any = None
            try:
                with self._mapped(dropped=True):
                    if self._conn is None or self._conn.closed:
                        self._conn = self._connect()
                    conn = self._conn
                    conn.deadline = time.monotonic() + self.statement_timeout + GRACE
                    block = conn.pipeline()
                    pipeline = block.__enter__()
                    self._block = block
                    cursors = [conn.execute(sql, params, binary=binary) for sql, params in statements]
                    pending = (block, pipeline, cursors)
            except _Dropped:
                pass  # the rows are read afresh, on a new connection
            except BaseException:
                self._drop()  # a half-sent pipeline: the connection cannot be reused
                raise
            done: list[list[list[tuple[Any, ...]]]] = []

            def rows() -> list[list[tuple[Any, ...]]]:
                if not done:
                    done.append(self._finish(pending, statements, binary=binary))
                return done[0]

            try:
                yield rows
            finally:
                if pending is not None and not done:
                    self._drop()  # results still on the way: the connection cannot be reused

    def _finish(
        self, pending: Any, statements: Sequence[Any], *, binary: bool
    ) -> list[list[tuple[Any, ...]]]:
        """The rows of statements :meth:`sent` sent (``pending``; None: sending failed on a
        dropped connection, so they run now on a new one)."""
        if pending is not None:
            block, pipeline, cursors = pending
            try:
                with self._mapped(dropped=True):
                    pipeline.sync()
                    got = [list(cur.fetchall()) if cur.description else [] for cur in cursors]
                    self._block = None
                    block.__exit__(None, None, None)
                    return got
            except _Dropped:
                pass
            except BaseException:
                self._drop()  # a pipeline left mid-way: the connection cannot be reused
                raise
        return self._first(statements, binary=binary)

    @contextmanager
    def _held(self) -> Iterator[None]:
        if not self._lock.acquire(timeout=self.statement_timeout + GRACE):  # the read in front is stuck
            raise self._timed_out()
        try:
            yield
        finally:
            self._lock.release()

    def _first(self, statements: Sequence[Any], *, binary: bool) -> list[list[tuple[Any, ...]]]:
        """Run the statements (the lock held), opening the connection if needed and reopening
        it once if the server dropped it."""
        for attempt in (1, 2):
            try:
                with self._mapped(dropped=attempt == 1):
                    if self._conn is None or self._conn.closed:
                        self._conn = self._connect()
                    return self._run(statements, binary=binary)
            except _Dropped:
                continue
        raise AssertionError("unreachable")  # pragma: no cover

    def _run(self, statements: Sequence[Any], *, binary: bool) -> list[list[tuple[Any, ...]]]:
        conn = self._conn
        conn.deadline = time.monotonic() + self.statement_timeout + GRACE
        if len(statements) == 1:
            sql, params = statements[0]
            return [list(conn.execute(sql, params, binary=binary).fetchall())]
        block = conn.pipeline()
        pipeline = block.__enter__()
        self._block = block
        try:
            cursors = [conn.execute(sql, params, binary=binary) for sql, params in statements]
            pipeline.sync()  # every result in: a cursor without one (BEGIN) has no description
            got = [list(cur.fetchall()) if cur.description else [] for cur in cursors]
        except BaseException:
            self._drop()  # a pipeline left mid-way (a timeout, a lost server): not reusable
            raise
        self._block = None
        block.__exit__(None, None, None)
        return got

    @contextmanager
    def _mapped(self, *, dropped: bool = False) -> Iterator[None]:
        """psycopg's failures as one-line ``error`` s; with ``dropped``, a connection the server
        dropped as :class:`_Dropped` (the caller reopens it)."""
        import psycopg

        try:
            yield
        except psycopg.errors.QueryCanceled:  # the server's statement_timeout
            raise self._timed_out() from None
        except psycopg.errors.ConnectionTimeout as exc:
            self._drop()
            raise self._error(
                f"database unreachable: no connection within {self.connect_timeout:g} s"
                f"{self._settings[0]}: {_first_line(exc)}"
            ) from None
        except psycopg.OperationalError as exc:
            self._drop()
            if _client_timeout(exc):  # no answer at all: the connection is unusable
                raise self._timed_out() from None
            if dropped:
                raise _Dropped() from None
            raise self._error(f"database unreachable: {_first_line(exc)}") from None

    def _timed_out(self) -> Exception:
        return self._error(
            f"the database did not answer a read within {self.statement_timeout:g} s{self._settings[1]}"
        )

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        block, self._block = self._block, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # pragma: no cover - closing a broken connection
                pass
        if block is not None:
            # Leave the closed connection's pipeline block: told of no error, psycopg raises
            # (caught here) where, left to the garbage collector, it logs a warning.
            try:
                block.__exit__(None, None, None)
            except Exception:
                pass

    def close(self) -> None:
        """Close the connection (a later read opens a new one)."""
        with self._lock:
            self._drop()


class _Dropped(Exception):
    """The server dropped the connection (reopened once)."""


def int_array(values: Iterable[int]) -> str:
    """``values`` as PostgreSQL's array literal (``{1,2,3}``), for a parameter the statement
    casts (``= ANY(%s::text::int8[])``): psycopg dumps a list of Python ints element by element
    (~0.12 ms for 240 of them, a search's usual batch), the literal is one string (~0.01 ms,
    the server's parse included)."""
    return "{" + ",".join(map(str, values)) + "}"


def _register_vector(conn: Any) -> None:
    """pgvector's binary adapters, so vectors travel as float32 (when the server has the
    extension and pgvector's Python package is installed)."""
    try:
        from pgvector.psycopg.vector import register_vector_info
    except ImportError:  # pragma: no cover - pgvector is a dependency of goclaw
        return
    from psycopg.types import TypeInfo

    info = TypeInfo.fetch(conn, "vector")
    if info is not None:
        register_vector_info(conn, info)


def shared(engine: Any, error: Callable[[str], Exception] = ConnectionError) -> DirectReads:
    """The :class:`DirectReads` of a SQLAlchemy ``engine`` (one per engine and ``error``, with
    the default timeouts), closed when the engine is garbage-collected if nobody closed it."""
    with _LOCK:
        per_engine = _SHARED.get(engine)
        if per_engine is None:
            per_engine = _SHARED[engine] = {}
        reads = per_engine.get(error)
        if reads is None:
            connect = engine.dialect.create_connect_args(engine.url)
            reads = per_engine[error] = DirectReads(connect, error=error)
            weakref.finalize(engine, reads.close)
        return reads


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
    ``timeout`` since psycopg 3.3.6)."""
    import psycopg

    class DeadlineConnection(psycopg.Connection[Any]):
        deadline: float | None = None

        def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
            if timeout is None and self.deadline is not None:
                timeout = max(self.deadline - time.monotonic(), 0.001)
            return super().wait(gen, interval, timeout)

    return DeadlineConnection
