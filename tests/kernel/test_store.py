"""The store on both backends: migrations, transactions, types, scoping."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text
from sqlmodel import select

from goclaw.contracts.store import AgentContextFile, EmbeddingCache
from goclaw.engine import Engine
from goclaw.errors import NotFoundError, StoreError, ValidationError
from goclaw.store import migrate
from goclaw.store.database import Database
from goclaw_kg.tables import KGEntity


def test_fresh_database_is_at_head(engine: Any) -> None:
    head, _ = migrate.known_revisions()
    assert migrate.current_revision(engine.db) == head


def test_sqlite_is_in_the_workspace_in_wal_mode(workspace: Path) -> None:
    with Engine.open(workspace) as engine:
        assert engine.db.backend == "sqlite"
        assert (workspace / ".goclaw" / "goclaw.db").exists()
        with engine.db.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA page_size").scalar() == 8192  # a new database


def test_an_existing_database_keeps_its_page_size(tmp_path: Path) -> None:
    """8 KB pages are for new databases only: one made with 4 KB pages opens, migrates and
    writes with 4 KB pages (changing it would need a VACUUM, which goclaw never runs behind
    the user's back)."""
    import sqlite3

    ws = tmp_path / "ws"
    (ws / ".goclaw").mkdir(parents=True)
    old = sqlite3.connect(ws / ".goclaw" / "goclaw.db")
    old.execute("PRAGMA page_size=4096")
    old.execute("PRAGMA journal_mode=WAL")  # writes the header: the page size is now fixed
    old.close()
    with Engine.open(ws) as engine:
        engine.agents.create("ada")
        with engine.db.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA page_size").scalar() == 4096
        assert engine.agents.get("ada").name == "ada"


def test_reopen_is_a_noop(make_engine: Callable[..., Any]) -> None:
    first = make_engine()
    first.agents.create("keep")
    second = make_engine()
    assert [a.name for a in second.agents.list()] == ["keep"]


def test_newer_schema_is_refused(make_engine: Callable[..., Any]) -> None:
    engine = make_engine()
    with engine.db.write() as s:
        s.exec(text(f"UPDATE {migrate.VERSION_TABLE} SET version_num = '9999_from_the_future'"))  # type: ignore[call-overload]
    with pytest.raises(StoreError) as err:
        make_engine()
    assert "newer than this goclaw" in str(err.value)


def test_a_failed_open_leaves_no_connection_open(
    make_engine: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Engine.open`` failing after it connected (a schema refused here; a bad plugin table, a
    start-up hook's error) left its pool to the garbage collector: the connections stayed open
    until then (psycopg's "deleted while still open" ResourceWarning, charged to a later test)."""
    engine = make_engine()
    with engine.db.write() as s:
        s.exec(text(f"UPDATE {migrate.VERSION_TABLE} SET version_num = '9999_from_the_future'"))  # type: ignore[call-overload]
    opened: list[Database] = []
    real = Database.for_workspace.__func__  # type: ignore[attr-defined]

    def for_workspace(cls: type[Database], workspace: Path, database_url: str | None) -> Database:
        opened.append(real(cls, workspace, database_url))
        return opened[-1]

    monkeypatch.setattr(Database, "for_workspace", classmethod(for_workspace))
    with pytest.raises(StoreError, match="newer than this goclaw"):
        make_engine()
    assert len(opened) == 1 and opened[0].engine.pool.checkedin() == 0  # disposed: none pooled


def test_foreign_database_is_refused(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE customers (id INTEGER)")
    con.commit()
    con.close()
    db = Database(f"sqlite:///{path}")
    with pytest.raises(StoreError, match="did not create"):
        migrate.upgrade(db)
    db.dispose()


def test_empty_database_is_created_at_head(tmp_path: Path) -> None:
    """An empty database has no revision; the kernel's chain alone creates the kernel's tables
    (the features' come from their plugins' chains, tests/kernel/test_schema.py)."""
    db = Database(f"sqlite:///{tmp_path / 'old.db'}")
    assert migrate.current_revision(db) is None
    assert migrate.upgrade(db) == migrate.known_revisions()[0]
    with db.engine.connect() as conn:
        names = {r[0] for r in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"agents", "events", "worker_state", "embedding_cache"} <= names
    assert not {"memory_chunks", "skills"} & names
    db.dispose()


def test_unreachable_postgres_is_one_line(workspace: Path) -> None:
    with pytest.raises(StoreError) as err:
        Engine.open(workspace, database_url="postgresql://u:secret@127.0.0.1:1/nope")
    message = str(err.value)
    assert "cannot connect" in message
    assert "secret" not in message
    assert "\n" not in message


def test_write_rolls_back_on_error(engine: Any) -> None:
    agent = engine.agents.create("tx")
    with pytest.raises(RuntimeError), engine.db.write() as s:
        s.add(AgentContextFile(agent_id=agent.id, file_name="SOUL.md", content="x"))
        s.flush()
        raise RuntimeError("abort")
    with engine.db.session() as s:
        assert s.exec(select(AgentContextFile)).all() == []


def test_vectors_round_trip_any_dimension(engine: Any) -> None:
    for dim in (3, 384):
        vec = np.random.default_rng(dim).standard_normal(dim).astype(np.float32)
        with engine.db.write() as s:
            s.add(EmbeddingCache(chunk_hash=f"h{dim}", provider="p", model=f"m{dim}", dim=dim, embedding=vec))
        with engine.db.session() as s:
            row = s.get(EmbeddingCache, (f"h{dim}", "p", f"m{dim}"))
            assert row is not None
            assert row.embedding.dtype == np.float32
            np.testing.assert_allclose(row.embedding, vec, rtol=1e-6)


def test_datetimes_are_utc_aware(engine: Any) -> None:
    agent = engine.agents.create("clock")
    assert agent.created_at.tzinfo is not None
    fetched = engine.agents.get("clock")
    assert fetched.created_at.utcoffset().total_seconds() == 0


def test_only_current_kg_rows_are_unique(engine: Any) -> None:
    agent = engine.agents.create("kg")
    when = datetime(2026, 1, 1, tzinfo=UTC)
    with engine.db.write() as s:
        s.add(KGEntity(agent_id=agent.id, name="Ada", normalized_name="ada", valid_until=when))
        s.add(KGEntity(agent_id=agent.id, name="Ada", normalized_name="ada"))
    with pytest.raises(StoreError), engine.db.write() as s:
        s.add(KGEntity(agent_id=agent.id, name="ADA", normalized_name="ada"))


# --------------------------------------------------------------------------- agents


def test_agents_create_list_get(engine: Any) -> None:
    engine.agents.create("bob", "predefined", description="helps")
    engine.agents.create("alice")
    assert [a.name for a in engine.agents.list()] == ["alice", "bob"]
    bob = engine.agents.get("bob")
    assert bob.agent_type == "predefined" and bob.description == "helps"


@pytest.mark.parametrize("name", ["", "Bob", "../x", "a b", "x" * 65, "-lead"])
def test_agent_names_are_validated(engine: Any, name: str) -> None:
    with pytest.raises(ValidationError):
        engine.agents.create(name)


def test_duplicate_agent_is_a_clear_error(engine: Any) -> None:
    engine.agents.create("dup")
    with pytest.raises(ValidationError, match="already exists"):
        engine.agents.create("dup")


def test_unknown_agent(engine: Any) -> None:
    with pytest.raises(NotFoundError, match="ghost"):
        engine.agents.get("ghost")


def test_links_and_teams(engine: Any) -> None:
    for name in ("lead", "coder", "writer"):
        engine.agents.create(name)
    engine.agents.link("lead", "coder", "code tasks")
    engine.agents.link("lead", "coder", "code and review")  # idempotent, updates description
    assert [(a.name, link.description) for a, link in engine.agents.links("lead")] == [
        ("coder", "code and review")
    ]
    with pytest.raises(ValidationError):
        engine.agents.link("lead", "lead")
    engine.agents.create_team("docs", "writes docs")
    engine.agents.add_to_team("docs", "writer", "lead")
    engine.agents.add_to_team("docs", "coder")
    [(team, role, mates)] = engine.agents.teams_of("writer")
    assert team.name == "docs" and role == "lead"
    assert [(m.name, r) for m, r in mates] == [("coder", "member")]
    assert engine.agents.unlink("lead", "coder") is True
    assert engine.agents.links("lead") == []
