"""One autocommit psycopg connection, outside the store's pool, for the small reads every
PostgreSQL memory search makes with the ``inprocess`` backend (issue 11): the agent's version
token and the winners' rows.

Through the pool each read costs three round trips (the pre-ping on checkout, the query, the
rollback on return): 0.21 ms for the version token and 1.1 ms for 60 rows at 100k chunks,
against 0.03 ms and 0.19 ms here. One connection per engine, shared by threads under a lock
(each read is well under a millisecond), opened on first use, reopened once if the server
dropped it, and closed with the engine.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from goclaw.errors import StoreError

if TYPE_CHECKING:
    from goclaw.engine import Engine

_DIRECT: weakref.WeakKeyDictionary[Any, DirectConnection] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


class DirectConnection:
    """An autocommit connection to the engine's PostgreSQL database (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        # Weakly: this is the value of a dictionary weakly keyed by the engine, and a strong
        # reference would keep an engine dropped without close() (and its pool) alive for good.
        self._engine = weakref.ref(engine)
        self._conn: Any = None
        self._lock = threading.Lock()

    def _connect(self) -> Any:
        import psycopg

        engine = self._engine()
        if engine is None:
            raise StoreError("the engine of this connection was closed")
        sa = engine.db.engine
        cargs, cparams = sa.dialect.create_connect_args(sa.url)
        return psycopg.connect(*cargs, **cparams, autocommit=True)

    def query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Run one read-only statement (``%s`` placeholders) and return its rows."""
        import psycopg

        with self._lock:
            for attempt in (1, 2):
                try:
                    if self._conn is None or self._conn.closed:
                        self._conn = self._connect()
                    rows: list[tuple[Any, ...]] = self._conn.execute(sql, params).fetchall()
                    return rows
                except psycopg.OperationalError as exc:  # a dropped connection: reopen once
                    self._drop()
                    if attempt == 2:
                        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                        raise StoreError(f"database unreachable: {first}") from None
        raise AssertionError("unreachable")  # pragma: no cover

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


def direct(engine: Engine) -> DirectConnection:
    """The engine's :class:`DirectConnection` (created on first use, closed with the engine)."""
    with _LOCK:
        conn = _DIRECT.get(engine)
        if conn is None:
            conn = _DIRECT[engine] = DirectConnection(engine)
            engine.on_close(conn.close)
            weakref.finalize(engine, conn.close)  # dropped without close(): close it anyway
        return conn
