"""Pytest fixtures for tests of goclaw plugins: real workspaces on disk, embedded SQLite and, when
``GOCLAW_TEST_DATABASE_URL`` is set, PostgreSQL with pgvector (each test in its own schema,
dropped afterwards). Load them with ``pytest_plugins = ["goclaw_memory.testing.fixtures"]``.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# The suite's failures show pytest's detailed assertion messages (its module is imported after
# this one, from the test modules).
pytest.register_assert_rewrite("goclaw_memory.testing.backend_suite", "goclaw_memory.testing.helpers")

BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def require_pg() -> str:
    """``GOCLAW_TEST_DATABASE_URL``, or skip the test (fail it under ``GOCLAW_REQUIRE_POSTGRES=1``)."""
    url = os.environ.get("GOCLAW_TEST_DATABASE_URL") or None
    if url is None:
        if os.environ.get("GOCLAW_REQUIRE_POSTGRES") == "1":
            pytest.fail("GOCLAW_REQUIRE_POSTGRES=1 but GOCLAW_TEST_DATABASE_URL is not set")
        pytest.skip("PostgreSQL not configured (set GOCLAW_TEST_DATABASE_URL)")
    return url


def _psycopg(url: str) -> str:
    """The URL with psycopg 3 as the driver (what goclaw itself connects with)."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


@pytest.fixture
def pg_schema_url() -> Iterator[str]:
    """A PostgreSQL URL whose connections use a fresh, private schema."""
    with private_schema() as url:
        yield url


@contextlib.contextmanager
def private_schema() -> Iterator[str]:
    """A URL on a fresh schema of the test database (skips without one), dropped afterwards."""
    base = _psycopg(require_pg())
    from sqlalchemy import create_engine, text

    schema = "t_" + uuid.uuid4().hex[:12]
    admin = create_engine(base)
    with admin.begin() as conn:
        conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        # Tests see `public` (for pgvector's type), so tables left there by a manual run
        # would shadow-fail isolation: the test database's public schema holds no tables.
        stray = conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).scalars()
        for table in list(stray):
            conn.execute(text(f'DROP TABLE IF EXISTS public."{table}" CASCADE'))
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    sep = "&" if "?" in base else "?"
    try:
        yield f"{base}{sep}options=-csearch_path%3D{schema},public"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        admin.dispose()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private HOME, so the skill tiers under ``~`` are the test's, never the developer's."""
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    return h


@pytest.fixture
def workspace(tmp_path: Path, home: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database_url(backend: str, request: pytest.FixtureRequest) -> str | None:
    """``None`` (embedded SQLite in the workspace) or a private PostgreSQL schema URL."""
    if backend == "sqlite":
        return None
    url: str = request.getfixturevalue("pg_schema_url")
    return url


@pytest.fixture
def make_engine(workspace: Path, database_url: str | None) -> Iterator[Callable[..., Any]]:
    """Open engines (``goclaw.Engine.open`` options) on the test workspace and database; all
    are closed at teardown."""
    from goclaw import Engine

    opened: list[Any] = []

    def _make(**kwargs: Any) -> Any:
        kwargs.setdefault("database_url", database_url)
        eng = Engine.open(workspace, **kwargs)
        opened.append(eng)
        return eng

    yield _make
    for eng in opened:
        eng.close()
