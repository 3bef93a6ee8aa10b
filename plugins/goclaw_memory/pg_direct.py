"""One autocommit psycopg connection per engine, outside the store's pool, for the memory
backends' reads on PostgreSQL: the ``inprocess`` backend's version token and winners' rows,
and every read of the ``postgresql`` backend's search.

Through the pool each read costs three round trips (the pre-ping on checkout, the query, the
rollback on return): 0.21 ms for the version token and 1.1 ms for 60 rows at 100k chunks,
against 0.03 ms and 0.19 ms here. The connection is :class:`goclaw_search.pg_reads.DirectReads`
(shared by threads under a lock, reopened once if the server dropped it) with the timeouts of
``[plugins.memory]``: opening it gives up after ``pg_connect_timeout`` seconds, and a read after
``pg_statement_timeout`` (first the server's own ``statement_timeout``, then, a little later,
the client stops waiting for a server or network that no longer answers). Either way the
search fails with a :class:`~goclaw.errors.StoreError` naming the setting. Closed with the
engine.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any

from goclaw.errors import StoreError
from goclaw_search.pg_reads import CONNECT_TIMEOUT, STATEMENT_TIMEOUT, DirectReads

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

_DIRECT: weakref.WeakKeyDictionary[Any, DirectConnection] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
_SETTINGS = ("plugins.memory.pg_connect_timeout", "plugins.memory.pg_statement_timeout")


class DirectConnection(DirectReads):
    """The engine's direct connection (see the module docstring)."""

    def __init__(
        self,
        engine: Host,
        *,
        connect_timeout: float = CONNECT_TIMEOUT,
        statement_timeout: float = STATEMENT_TIMEOUT,
    ) -> None:
        sa = engine.db.engine
        super().__init__(
            sa.dialect.create_connect_args(sa.url),
            error=StoreError,
            connect_timeout=connect_timeout,
            statement_timeout=statement_timeout,
            settings=_SETTINGS,
        )
        # Weakly: this is the value of a dictionary weakly keyed by the engine, and a strong
        # reference would keep an engine dropped without close() (and its pool) alive for good.
        self._engine = weakref.ref(engine)

    def close(self) -> None:
        engine = self._engine()
        with _LOCK:
            if engine is not None and _DIRECT.get(engine) is self:
                del _DIRECT[engine]
        super().close()


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
