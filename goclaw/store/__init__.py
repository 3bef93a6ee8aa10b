"""The store: schema (SQLModel), migrations and transactions for SQLite and PostgreSQL."""

from goclaw.store.database import Database

__all__ = ["Database"]
