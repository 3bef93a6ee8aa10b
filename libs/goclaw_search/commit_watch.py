"""Knowing cheaply whether a SQLite database changed: for an in-memory index kept in step with
tables (the memory tiers' indexes), one ``PRAGMA data_version`` instead of a query a search.

``data_version`` of a connection moves when any *other* connection commits to the file. Each
thread gets its own read-only connection (``query_only``), and remembers the tokens it read
(an agent's change counter, say) until the version moves; then they are read again. For a
database that is not a file (PostgreSQL, ``:memory:``, a URI) there is nothing to watch:
:meth:`CommitWatch.connection` is ``None`` and nothing is remembered.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["CommitWatch"]


class CommitWatch:
    """``path``: the SQLite file (``None`` or not a file: inactive); ``on_open`` receives each
    connection opened (for instance to close it with its owner)."""

    def __init__(self, path: str | None, on_open: Callable[[sqlite3.Connection], Any] | None = None) -> None:
        self.path = path if path and path != ":memory:" and not path.startswith("file:") else None
        self._on_open = on_open
        self._local = threading.local()

    def connection(self) -> sqlite3.Connection | None:
        """This thread's read-only connection to the file, ``None`` when inactive."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None and self.path is not None:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout=5000")
            conn.execute("PRAGMA query_only=1")
            self._local.conn, self._local.version, self._local.tokens = conn, None, {}
            if self._on_open is not None:
                self._on_open(conn)
        return conn

    def remembered(self, key: Hashable) -> tuple[bool, Any]:
        """``(True, token)`` when this thread read ``key``'s token and no other connection has
        committed since; ``(False, None)`` otherwise (and always when inactive)."""
        conn = self.connection()
        if conn is None:
            return False, None
        local = self._local
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if version != local.version:
            local.version, local.tokens = version, {}
            return False, None
        return (True, local.tokens[key]) if key in local.tokens else (False, None)

    def remember(self, key: Hashable, token: Any) -> None:
        """Keep ``key``'s token until the database changes (nothing when inactive)."""
        if self.connection() is not None:
            self._local.tokens[key] = token
