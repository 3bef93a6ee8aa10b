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
