"""PostgreSQL: goclaw keeps its tables in the connection's own schema (``current_schema()``),
never in another schema further along the search_path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from goclaw.engine import Engine
from goclaw.errors import StoreError
from goclaw.store import migrate
from goclaw_memory.testing.fixtures import private_schema

pytestmark = pytest.mark.postgres


def _schema(url: str) -> str:
    found = re.search(r"search_path%3D(\w+),public", url)
    assert found is not None
    return found.group(1)


def _tables(url: str, schema: str) -> set[str]:
    eng = create_engine(url)
    try:
        with eng.connect() as conn:
            sql = text("SELECT tablename FROM pg_tables WHERE schemaname = :s")
            return set(conn.execute(sql, {"s": schema}).scalars())
    finally:
        eng.dispose()


def test_a_schema_ahead_on_the_search_path_gets_its_own_tables(tmp_path: Path, home: Path) -> None:
    with private_schema() as url_a, private_schema() as url_b:
        a, b = _schema(url_a), _schema(url_b)
        url_ba = url_b.replace(f"search_path%3D{b},public", f"search_path%3D{b},{a},public")
        with Engine.open(tmp_path / "a", database_url=url_a) as engine:
            engine.agents.create("alice")

        with Engine.open(tmp_path / "b", database_url=url_ba) as engine:
            components = engine.hooks.schema_components()
            assert {"memory", "skills", "kg", "episodic", "channel_memory"} <= {c.name for c in components}
            in_b = _tables(url_ba, b)
            for comp in components:
                assert migrate.version_table(comp.name) in in_b
                assert set(comp.table_names) <= in_b, comp.name
            assert {migrate.VERSION_TABLE, "agents"} <= in_b
            assert set(migrate.stamps(engine.db)) >= {"kernel", *(c.name for c in components)}
            assert [x.name for x in engine.agents.list()] == []
            engine.agents.create("bob")
            assert [x.name for x in engine.agents.list()] == ["bob"]

        with Engine.open(tmp_path / "a", database_url=url_a) as engine:
            assert [x.name for x in engine.agents.list()] == ["alice"]


def test_a_search_path_naming_no_existing_schema_is_refused(tmp_path: Path, home: Path) -> None:
    with private_schema() as url:
        missing = url.replace(f"search_path%3D{_schema(url)},public", "search_path%3Dno_such_schema")
        with pytest.raises(StoreError, match=r"no_such_schema.*CREATE SCHEMA"):
            Engine.open(tmp_path / "ws", database_url=missing)
