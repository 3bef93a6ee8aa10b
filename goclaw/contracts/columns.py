"""Columns that behave the same on SQLite and PostgreSQL, for the kernel's tables and the
plugins' tables alike (a plugin declares its tables with these so that its rows look like the
kernel's: UTC datetimes, JSON, float32 vectors, ``""``-defaulted text).

* :class:`Vector` — float32 vectors: a ``BLOB`` on SQLite, pgvector's ``vector`` (no fixed
  dimension: the embedding model decides it) on PostgreSQL. Python side is
  always a 1-D ``numpy.ndarray`` of float32.
* :class:`UTCDateTime` — timezone-aware UTC datetimes on both backends (SQLite stores naive
  text, so the zone is re-attached on load); :func:`utcnow` is the time to store.
* the field helpers (:func:`created_field`, :func:`json_field`, ...) — SQLModel fields built on
  these types.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, LargeBinary, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine
from sqlmodel import Field

DEFAULT_TENANT = "default"

__all__ = [
    "DEFAULT_TENANT",
    "UTCDateTime",
    "Vector",
    "created_field",
    "json_field",
    "new_id",
    "text_field",
    "ts_field",
    "utcnow",
    "vector_field",
]


def utcnow() -> datetime:
    """The current time, timezone-aware UTC (the only kind of datetime goclaw stores)."""
    return datetime.now(UTC)


def new_id() -> str:
    """A random 32-character hex id (primary keys of string-keyed tables)."""
    return uuid.uuid4().hex


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
            # registers on each connection, not formatted as text.
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


def ts_field(nullable: bool = False, index: bool = False) -> Any:
    """A UTC datetime column, ``None`` by default."""
    return Field(default=None, sa_type=UTCDateTime, nullable=nullable, index=index)


def created_field() -> Any:
    """A UTC datetime column set to now on insert."""
    return Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)


def json_field(default: Any) -> Any:
    """A JSON column holding a copy of ``default`` (a dict or a list) by default."""
    factory = (lambda: dict(default)) if isinstance(default, dict) else (lambda: list(default))
    return Field(default_factory=factory, sa_column=Column(JSON, nullable=False))


def vector_field() -> Any:
    """A nullable float32 vector of any dimension (BLOB on SQLite, pgvector on PostgreSQL)."""
    return Field(default=None, sa_column=Column(Vector(), nullable=True))


def text_field(default: str = "") -> Any:
    """A non-null TEXT column with a server default."""
    return Field(default=default, sa_column=Column(Text, nullable=False, server_default=default))
