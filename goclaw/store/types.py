"""Column types that behave the same on SQLite and PostgreSQL.

* :class:`Vector` — float32 vectors: a ``BLOB`` on SQLite, pgvector's ``vector`` (no fixed
  dimension: the embedding model decides it, DESIGN.md §4) on PostgreSQL. Python side is
  always a 1-D ``numpy.ndarray`` of float32.
* :class:`UTCDateTime` — timezone-aware UTC datetimes on both backends (SQLite stores naive
  text, so the zone is re-attached on load).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, LargeBinary
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine


def utcnow() -> datetime:
    """The current time, timezone-aware UTC (the only kind of datetime goclaw stores)."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            # Stored as naive UTC text so that lexical order is time order.
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Vector(TypeDecorator[Any]):
    """A float32 vector of any dimension; see the module docstring."""

    impl = LargeBinary
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            from pgvector.sqlalchemy import VECTOR

            return dialect.type_descriptor(VECTOR())
        return dialect.type_descriptor(LargeBinary())

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        import numpy as np

        arr = np.asarray(value, dtype=np.float32).reshape(-1)
        if dialect.name == "postgresql":
            return arr
        return arr.tobytes()

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        import numpy as np

        if isinstance(value, bytes | bytearray | memoryview):
            return np.frombuffer(bytes(value), dtype=np.float32)
        return np.asarray(value, dtype=np.float32)


def pg_binary_vectors(conn: Any) -> bool:
    """Let the psycopg connection behind ``conn`` (a SQLAlchemy ``Connection``) send and receive
    pgvector values in binary, so a parameter may be a float32 ``numpy.ndarray``.

    Formatting a 256-d vector as text costs ~130 µs in Python, the binary form ~2 µs: bulk
    writers (memory indexing, the embedding cache) call this and pass arrays. Registration is
    once per pooled connection. ``False`` when it is not possible (not psycopg, or no
    ``vector`` type in the database); callers then send text.
    """
    try:
        raw = conn.connection.driver_connection
        adapters = raw.adapters
    except AttributeError:
        return False
    if adapters.types.get("vector") is not None:
        return True
    try:
        from pgvector.psycopg.vector import register_vector_info
        from psycopg.types import TypeInfo

        info = TypeInfo.fetch(raw, "vector")
        if info is None:
            return False
        register_vector_info(raw, info)
    except Exception:
        return False
    return True


def pg_vector_text(vec: Any) -> str:
    """A pgvector text literal (the slow path, when :func:`pg_binary_vectors` is false)."""
    import numpy as np

    return "[" + ",".join(map(repr, np.asarray(vec, dtype=np.float32).reshape(-1).tolist())) + "]"
