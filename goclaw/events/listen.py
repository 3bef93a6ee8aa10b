"""Idle waiting for workers: LISTEN/NOTIFY on PostgreSQL, a sleep on SQLite."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

log = logging.getLogger(__name__)


class Listener:
    """Idle wait by sleeping (SQLite, or PostgreSQL without LISTEN)."""

    def wait(self, timeout: float, stop: threading.Event | None = None) -> bool:
        if stop is not None:
            return stop.wait(timeout) and False
        time.sleep(timeout)
        return False

    def close(self) -> None:
        return None


class PgListener(Listener):
    """A dedicated autocommit connection that ``LISTEN``s on the queue's channel."""

    def __init__(self, engine: Host, channel: str) -> None:
        raw = engine.db.engine.raw_connection()
        conn: Any = raw.driver_connection
        raw.detach()  # ours alone, never returned to the pool mid-LISTEN
        self._raw = raw
        conn.rollback()
        conn.autocommit = True
        conn.execute(f"LISTEN {channel}")
        self._conn = conn

    def wait(self, timeout: float, stop: threading.Event | None = None) -> bool:
        """Block until a notification or ``timeout``; True when woken by a notification."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (stop is not None and stop.is_set()):
                return False
            for _note in self._conn.notifies(timeout=min(remaining, 0.5), stop_after=1):
                return True

    def close(self) -> None:
        try:
            self._conn.close()
        except Exception:
            log.debug("closing the LISTEN connection failed", exc_info=True)
