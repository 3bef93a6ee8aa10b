"""The built-in memory search backends: ``sqlite`` (the retrieval engine's
in-memory index, :mod:`goclaw_memory.sqlite_backend`) and ``postgresql`` (tsvector + pgvector,
:mod:`goclaw_memory.pg_backend`). Both implement :class:`goclaw.contracts.search.SearchBackend`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from goclaw.contracts.host import Host


def make_sqlite_backend(engine: Host) -> Any:
    from goclaw_memory.sqlite_backend import SQLiteSearchBackend

    return SQLiteSearchBackend(engine)


def make_inprocess_backend(engine: Host) -> Any:
    from goclaw_memory.inprocess_backend import InProcessSearchBackend

    return InProcessSearchBackend(engine)


def make_postgres_backend(engine: Host) -> Any:
    from goclaw_memory.pg_backend import make_postgres_backend as make

    return make(engine)
