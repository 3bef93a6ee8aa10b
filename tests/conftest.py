"""Shared fixtures: real workspaces on disk, real SQLite, real PostgreSQL with pgvector.

PostgreSQL comes from ``GOCLAW_TEST_DATABASE_URL`` (``.ci/run`` starts a server and sets it).
Each test gets its own schema, dropped afterwards, so tests never see each other's rows.
Without the variable the PostgreSQL half of each parametrized test is skipped, unless
``GOCLAW_REQUIRE_POSTGRES=1`` (set in CI), which turns the skip into a failure.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Tests never read the developer's real ~/.agents or ~/.goclaw: see the `home` fixture.

BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def _pg_base_url() -> str | None:
    return os.environ.get("GOCLAW_TEST_DATABASE_URL") or None


def require_pg() -> str:
    url = _pg_base_url()
    if url is None:
        if os.environ.get("GOCLAW_REQUIRE_POSTGRES") == "1":
            pytest.fail("GOCLAW_REQUIRE_POSTGRES=1 but GOCLAW_TEST_DATABASE_URL is not set")
        pytest.skip("PostgreSQL not configured (set GOCLAW_TEST_DATABASE_URL)")
    return url


@pytest.fixture
def pg_schema_url() -> Iterator[str]:
    """A PostgreSQL URL whose connections use a fresh, private schema."""
    base = require_pg()
    from sqlalchemy import create_engine, text

    from goclaw.store.database import normalise_url

    schema = "t_" + uuid.uuid4().hex[:12]
    admin = create_engine(normalise_url(base))
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
        yield f"{normalise_url(base)}{sep}options=-csearch_path%3D{schema},public"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        admin.dispose()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private HOME so tiers 3-4 (~/.agents/skills, ~/.goclaw/skills) are test-controlled."""
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
    """Open engines on the test workspace and database; all are closed at teardown."""
    from goclaw.engine import Engine

    opened: list[Any] = []

    def _make(**kwargs: Any) -> Any:
        kwargs.setdefault("database_url", database_url)
        eng = Engine.open(workspace, **kwargs)
        opened.append(eng)
        return eng

    yield _make
    for eng in opened:
        eng.close()


@contextlib.contextmanager
def module_engine(backend: str, base: Path, **kwargs: Any) -> Iterator[Any]:
    """An engine for a module-scoped fixture: its own HOME, workspace (``base``/ws) and database
    (SQLite in the workspace or a fresh PostgreSQL schema), closed and dropped afterwards. For
    tests that only probe it (parametrized refusals, queries): one engine per database instead of
    one per case; a test that changes it uses the function-scoped ``engine``."""
    from goclaw.engine import Engine
    from tests.surfaces_helpers import module_database

    (base / "home").mkdir(exist_ok=True)
    (base / "ws").mkdir(exist_ok=True)  # the caller may have written files in it already
    with pytest.MonkeyPatch.context() as mp, module_database(backend) as url:
        mp.setenv("HOME", str(base / "home"))  # tiers 3-4 read ~: never the real one
        eng = Engine.open(base / "ws", database_url=url, **kwargs)
        try:
            yield eng
        finally:
            eng.close()


@pytest.fixture
def engine(make_engine: Callable[..., Any]) -> Any:
    """An engine on a fresh workspace, parametrized over SQLite and PostgreSQL."""
    return make_engine()
