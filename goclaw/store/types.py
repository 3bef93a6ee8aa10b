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

    def bind_processor(self, dialect: Dialect) -> Any:
        if dialect.name != "postgresql":
            return super().bind_processor(dialect)

        def process(value: Any) -> Any:
            # A float32 array, sent in pgvector's binary form by the adapters the store
            # registers on each connection (register_pg_vectors), not formatted as text.
            return self.process_bind_param(value, dialect)

        return process

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


def register_pg_vectors(raw: Any) -> bool:
    """Register pgvector's psycopg adapters on a raw psycopg connection, so vectors travel in
    binary (a float32 ``numpy.ndarray`` parameter; formatting a 256-d vector as text costs
    ~130 µs in Python, the binary form ~2 µs). The store calls this on every pool checkout
    until it succeeds; ``False`` while the database has no ``vector`` type yet (before the
    first migration). Leaves no transaction open."""
    adapters = getattr(raw, "adapters", None)
    if adapters is None:
        return False
    if adapters.types.get("vector") is not None:
        return True
    from pgvector.psycopg.vector import register_vector_info
    from psycopg import pq
    from psycopg.types import TypeInfo

    idle = raw.info.transaction_status == pq.TransactionStatus.IDLE
    try:
        info = TypeInfo.fetch(raw, "vector")
        if info is None:
            return False
        register_vector_info(raw, info)
        return True
    finally:
        if idle:
            raw.rollback()
