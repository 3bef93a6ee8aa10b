"""Autocommit psycopg connections outside the store's pool, one per engine, thread and lane, for
the memory backends' reads on PostgreSQL: the ``inprocess`` backend's version token and winners'
rows, and every read of the ``postgresql`` backend's search (lane 1: a hybrid search's vector
statements, which the server runs while lane 0 reads and scores the postings).

Through the pool each read costs three round trips (the pre-ping on checkout, the query, the
rollback on return): 0.21 ms for the version token and 1.1 ms for 60 rows at 100k chunks,
against 0.03 ms and 0.19 ms here. Each is a :class:`goclaw_search.pg_reads.DirectReads`
(reopened once if the server dropped it) with the timeouts of
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

_SETTINGS = ("plugins.memory.pg_connect_timeout", "plugins.memory.pg_statement_timeout")
_LOCK = threading.Lock()


class DirectConnection(DirectReads):
    """A direct connection of an engine (see the module docstring)."""

    def __init__(
        self,
        engine: Host,
        *,
        connect_timeout: float = CONNECT_TIMEOUT,
        statement_timeout: float = STATEMENT_TIMEOUT,
        generic_plans: bool = False,
    ) -> None:
        sa = engine.db.engine
        super().__init__(
            sa.dialect.create_connect_args(sa.url),
            error=StoreError,
            connect_timeout=connect_timeout,
            statement_timeout=statement_timeout,
            settings=_SETTINGS,
            session=[("plan_cache_mode", "force_generic_plan")] if generic_plans else [],
        )


class _PerThread:
    """An engine's direct connections, one per thread that searched: threads of one process
    (a server's workers) search at once instead of queueing on one connection. A thread that
    ends leaves its connection to the next thread given its identifier; all close with the
    engine. Holds no reference to the engine (so an engine dropped without close() is freed)."""

    def __init__(self) -> None:
        self.by_thread: dict[tuple[int, int], DirectConnection] = {}

    def close(self) -> None:
        with _LOCK:
            conns, self.by_thread = list(self.by_thread.values()), {}
        for conn in conns:
            conn.close()


_DIRECT: weakref.WeakKeyDictionary[Any, _PerThread] = weakref.WeakKeyDictionary()


def direct(engine: Host, lane: int = 0) -> DirectConnection:
    """The calling thread's :class:`DirectConnection` to the engine's database for ``lane``
    (created on first use, closed with the engine), with the timeouts of ``[plugins.memory]``."""
    ident = (threading.get_ident(), lane)
    with _LOCK:
        per = _DIRECT.get(engine)
        if per is None:
            per = _DIRECT[engine] = _PerThread()
            engine.on_close(per.close)
            weakref.finalize(engine, per.close)  # dropped without close(): close them anyway
        conn = per.by_thread.get(ident)
        if conn is None:
            from goclaw.contracts.host import settings_or_defaults
            from goclaw_memory.settings import MemorySettings

            cfg = settings_or_defaults(engine, "memory", MemorySettings)
            conn = per.by_thread[ident] = DirectConnection(
                engine,
                connect_timeout=cfg.pg_connect_timeout,
                statement_timeout=cfg.pg_statement_timeout,
                generic_plans=lane == 0,
            )
        return conn
