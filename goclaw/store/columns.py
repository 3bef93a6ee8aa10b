"""Column helpers shared by the kernel's tables and the plugins' tables (SQLModel fields that
behave the same on SQLite and PostgreSQL). A plugin declares its tables with these so that its
rows look like the kernel's: UTC datetimes, JSON, float32 vectors, ``""``-defaulted text."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import JSON, Column, Text
from sqlmodel import Field

from goclaw.store.types import UTCDateTime, Vector, utcnow

DEFAULT_TENANT = "default"


def new_id() -> str:
    """A random 32-character hex id (primary keys of string-keyed tables)."""
    return uuid.uuid4().hex


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
