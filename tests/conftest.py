"""Shared fixtures: real workspaces on disk, real SQLite, real PostgreSQL with pgvector.

PostgreSQL comes from ``GOCLAW_TEST_DATABASE_URL`` (``.ci/run`` starts a server and sets it).
Each test gets its own schema, dropped afterwards, so tests never see each other's rows.
Without the variable the PostgreSQL half of each parametrized test is skipped, unless
``GOCLAW_REQUIRE_POSTGRES=1`` (set in CI), which turns the skip into a failure.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Tests never read the developer's real ~/.agents or ~/.goclaw: see the `home` fixture.

# The generic fixtures are the ones goclaw ships for plugin authors' tests.
from goclaw_memory.testing.fixtures import (  # noqa: F401 - fixtures and helpers re-exported
    BACKENDS,
    backend,
    database_url,
    home,
    make_engine,
    pg_schema_url,
    require_pg,
    workspace,
)


@contextlib.contextmanager
def module_engine(backend: str, base: Path, **kwargs: Any) -> Iterator[Any]:  # noqa: F811
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
def engine(make_engine: Callable[..., Any]) -> Any:  # noqa: F811
    """An engine on a fresh workspace, parametrized over SQLite and PostgreSQL."""
    return make_engine()


@pytest.fixture
def in_memory_search(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Engines the test opens search with the in-memory engine: on PostgreSQL ``inprocess``
    (``auto`` selects ``postgresql`` there), through the environment so that every engine and
    CLI call of the test uses it; on SQLite the default ``sqlite``. PostgreSQL: the ``backend``
    parameter says so, else the test's use of ``pg_schema_url``. For tests of that engine (its
    saved index, sketches, hot path), with ``pytestmark = pytest.mark.usefixtures(...)``.
    Returns the backend's name."""
    names = request.fixturenames
    if "backend" in names:
        on_pg = request.getfixturevalue("backend") == "postgresql"
    else:
        on_pg = "pg_schema_url" in names
    if on_pg:
        monkeypatch.setenv("GOCLAW_PLUGINS__MEMORY__BACKEND", "inprocess")
        return "inprocess"
    return "sqlite"
