"""Database access for both backends: SQLite and PostgreSQL.

``Database`` wraps one SQLAlchemy engine. SQLite is the embedded default
(``<workspace>/.goclaw/goclaw.db``, WAL mode, a busy timeout, ``BEGIN IMMEDIATE`` for write
transactions so concurrent writers queue instead of failing); PostgreSQL is selected with a
``postgresql://`` or ``postgresql+psycopg://`` URL.

Features use :meth:`Database.session` (read) and :meth:`Database.write` (read-write, commits
on success, rolls back on error). :meth:`Database.run_write` re-runs a whole transaction when
SQLite reports ``database is locked`` past the busy timeout, so that error never reaches a user.
"""

from __future__ import annotations

import logging
import os
import random
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TypeVar

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlmodel import Session

from goclaw.errors import StoreError
from goclaw.store.types import register_pg_vectors

log = logging.getLogger(__name__)
T = TypeVar("T")

Backend = Literal["sqlite", "postgresql"]

SQLITE_BUSY_TIMEOUT_MS = 30_000


def redact_url(url: str) -> str:
    """Hide the password in a database URL for messages."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", url)


def normalise_url(url: str) -> str:
    """Accept the common spellings; psycopg 3 is the PostgreSQL driver."""
    return re.sub(r"^postgres(?:ql)?://", "postgresql+psycopg://", url)


def is_locked_error(exc: BaseException) -> bool:
    text = str(getattr(exc, "orig", exc)).lower()
    return "database is locked" in text or "database table is locked" in text or "busy" in text


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    lines = str(orig).strip().splitlines()
    return lines[0] if lines else type(orig).__name__


class Database:
    """One database (SQLite file or PostgreSQL), its engine and its transactions."""

    def __init__(self, url: str, *, echo: bool = False) -> None:
        self.url = normalise_url(url)
        self.backend: Backend
        if self.url.startswith("sqlite"):
            self.backend = "sqlite"
        elif self.url.startswith("postgresql"):
            self.backend = "postgresql"
        else:
            raise StoreError(
                f"unsupported database_url {redact_url(url)!r}: use sqlite:///PATH or postgresql://..."
            )
        self.engine: Engine = self._create_engine(echo)

    # ------------------------------------------------------------------ construction
    @classmethod
    def for_workspace(cls, workspace: Path, database_url: str | None) -> Database:
        if database_url:
            return cls(database_url)
        db_dir = workspace / ".goclaw"
        try:  # owner only, whatever the umask: the folder holds the tokens, the file all memory
            db_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.close(os.open(db_dir / "goclaw.db", os.O_CREAT | os.O_RDONLY, 0o600))  # -wal, -shm: the same
        except OSError as exc:
            raise StoreError(f"cannot create {db_dir}: {exc.strerror or exc}") from None
        return cls(f"sqlite:///{db_dir / 'goclaw.db'}")

    def _create_engine(self, echo: bool) -> Engine:
        if self.backend == "sqlite":
            engine = create_engine(
                self.url,
                echo=echo,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
            )

            @event.listens_for(engine, "connect")
            def _on_connect(dbapi_conn: Any, _record: Any) -> None:
                # Let SQLAlchemy drive transactions (pysqlite's implicit BEGIN is broken
                # for SAVEPOINT and for BEGIN IMMEDIATE), then set the pragmas.
                dbapi_conn.isolation_level = None
                cur = dbapi_conn.cursor()
                # 8 KB pages for a new database (a no-op on an existing one): a memory chunk row
                # (text, terms, vector) is ~2.2 KB, so a 4 KB page holds one; at 100k chunks the
                # table is 259 MB instead of 395 MB and indexing spends less time writing pages.
                # Must come before WAL mode, which writes the header.
                cur.execute("PRAGMA page_size=8192")
                try:
                    cur.execute("PRAGMA journal_mode=WAL")
                except Exception:  # read-only media: keep going, reads still work
                    log.debug("could not switch SQLite to WAL", exc_info=True)
                cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
                cur.execute("PRAGMA foreign_keys=ON")
                cur.execute("PRAGMA synchronous=NORMAL")
                cur.close()

            @event.listens_for(engine, "begin")
            def _on_begin(conn: Any) -> None:
                write = conn.get_execution_options().get("goclaw_write", False)
                conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

            return engine
        engine = create_engine(self.url, echo=echo, pool_pre_ping=True, pool_size=5, max_overflow=5)

        @event.listens_for(engine, "checkout")
        def _on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
            # Binary pgvector values on every connection (goclaw.contracts.columns.Vector binds
            # float32 arrays); retried until the migration has created the extension.
            if not record.info.get("goclaw_vectors"):
                record.info["goclaw_vectors"] = register_pg_vectors(dbapi_conn)

        return engine

    # ------------------------------------------------------------------ checks
    def check_connection(self) -> None:
        """Connect once; an unreachable database is a one-line :class:`StoreError`."""
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
        except (OperationalError, DBAPIError) as exc:
            raise StoreError(
                f"cannot connect to database {redact_url(self.url)}: {_first_line(exc)}"
            ) from None

    # ------------------------------------------------------------------ transactions
    @contextmanager
    def session(self) -> Iterator[Session]:
        """A read session. Anything written is rolled back unless committed explicitly."""
        with Session(self.engine, expire_on_commit=False) as session:
            try:
                yield session
            except (OperationalError, DBAPIError) as exc:
                session.rollback()
                raise self._store_error(exc) from exc

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A read-write transaction: committed when the block ends, rolled back on error."""
        conn = self.engine.connect().execution_options(goclaw_write=True)
        try:
            with Session(bind=conn, expire_on_commit=False) as session:
                try:
                    yield session
                    session.commit()
                except (OperationalError, DBAPIError) as exc:
                    session.rollback()
                    raise self._store_error(exc) from exc
                except BaseException:
                    session.rollback()
                    raise
        finally:
            conn.close()

    def run_write(self, fn: Callable[[Session], T], *, attempts: int = 8) -> T:
        """Run ``fn`` in a write transaction, retrying the whole transaction when locked."""
        delay = 0.05
        for attempt in range(1, attempts + 1):
            try:
                with self.write() as session:
                    return fn(session)
            except StoreError as exc:
                cause = exc.__cause__
                if cause is None or not is_locked_error(cause) or attempt == attempts:
                    raise
                time.sleep(delay + random.random() * delay)
                delay = min(delay * 2, 2.0)
        raise AssertionError("unreachable")

    def _store_error(self, exc: BaseException) -> StoreError:
        text = _first_line(exc)
        lowered = text.lower()
        if "readonly" in lowered or "read-only" in lowered:
            return StoreError(f"the database is read-only ({redact_url(self.url)}): {text}")
        if "disk" in lowered and "full" in lowered:
            return StoreError(f"the disk is full, nothing was written: {text}")
        return StoreError(f"database error: {text}")

    def dispose(self) -> None:
        self.engine.dispose()
