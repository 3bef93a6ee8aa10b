"""The KG tier's in-memory index of an agent's facts: every current fact of the scope is
scored (however many newer ones there are), the index follows every writer through the agent's
change counter (``kg_versions``, moved by triggers), and a search of an unchanged graph reads
no fact."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, insert, text

from goclaw.engine import Engine
from goclaw.store.database import Database
from goclaw_kg.memory_tier import fact_hits, searcher
from goclaw_kg.tables import KGEntity
from tests.consolidation_helpers import alice_works_at_acme
from tests.legacy_schema import T0 as LEGACY_T0
from tests.legacy_schema import build_legacy
from tests.legacy_schema import insert as legacy_insert

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
NO_EMBED = {"embeddings": {"provider": "none"}}


def _snippets(engine: Any, agent: Any, query: str, user: str | None = None, **kw: Any) -> list[str]:
    return [h.text for h in fact_hits(engine, query, agent, user, 10, **kw)]


def _entities(engine: Any, agent_id: str, rows: list[tuple[str, str, datetime]]) -> None:
    """``(id, name, valid_from)`` entities of type ``thing``, in one bulk insert."""
    values = [
        {"id": i, "tenant_id": "default", "agent_id": agent_id, "user_id": "", "name": name,
         "normalized_name": name.lower(), "entity_type": "thing", "description": "", "confidence": 1.0,
         "properties": {}, "source_id": "", "valid_from": when, "created_at": when, "updated_at": when}
        for i, name, when in rows
    ]  # fmt: skip
    with engine.db.engine.begin() as conn:
        conn.execute(insert(KGEntity.__table__), values)  # type: ignore[attr-defined]


@pytest.fixture
def two_engines(workspace: Path, database_url: str | None) -> Iterator[tuple[Any, Any]]:
    """Two engines on one database: the searching one and another writer."""
    with (
        Engine.open(workspace, database_url, plugins=NO_EMBED) as eng,
        Engine.open(workspace, database_url, plugins=NO_EMBED) as other,
    ):
        yield eng, other


def test_a_fact_older_than_5000_newer_ones_is_found(make_engine: Any) -> None:
    """Every current fact of the scope is scored, however many newer ones there are: a fact
    older than 5,001 others is found (a tier reading only the newest 5,000 would miss it)."""
    engine = make_engine(plugins=NO_EMBED)
    agent = engine.agents.create("ada")
    old = [("quokka", "Quokka island ferry", T0)]
    newer = [(f"n{i}", f"Thing {i}", T0 + timedelta(minutes=i + 1)) for i in range(5_001)]
    _entities(engine, agent.id, old + newer)
    assert _snippets(engine, agent, "quokka ferry") == ["Quokka island ferry (thing)"]
    assert len(fact_hits(engine, "thing", agent, None, 3)) == 3  # ties: the newest first
    assert [h.text for h in fact_hits(engine, "thing", agent, None, 1)] == ["Thing 5000 (thing)"]


def test_a_write_by_another_engine_is_seen_by_the_next_search(two_engines: tuple[Any, Any]) -> None:
    eng, other = two_engines
    agent = eng.agents.create("ada")
    assert _snippets(eng, agent, "Alice") == []  # no counter yet: no fact
    other.db.run_write(lambda s: alice_works_at_acme(other, s, agent.id, T0, "works_at"))
    assert _snippets(eng, agent, "where does Alice work") == [
        "Alice works at Acme",
        "Alice (person): engineer",
    ]
    done = searcher(eng).reconciles
    for _ in range(3):
        _snippets(eng, agent, "Alice")
    assert searcher(eng).reconciles == done  # nothing changed: not even a pass over the rows
    other.db.run_write(
        lambda s: other.kg.upsert_entity(
            s, agent_id=agent.id, user_id="", name="Zeppelin", entity_type="thing"
        )
    )
    assert _snippets(eng, agent, "zeppelin") == ["Zeppelin (thing)"]
    done = searcher(eng).reconciles
    with other.db.engine.begin() as c:  # no searched column: the counter stays
        c.execute(text("UPDATE kg_entities SET confidence = 0.5, properties = '{}'"))
        c.execute(text("UPDATE kg_relations SET confidence = 0.5"))
    assert _snippets(eng, agent, "zeppelin") == ["Zeppelin (thing)"]
    assert searcher(eng).reconciles == done
    with other.db.engine.begin() as c:  # an update in place by raw SQL, then a delete
        c.execute(text("UPDATE kg_entities SET description = 'airship' WHERE name = 'Zeppelin'"))
    assert _snippets(eng, agent, "airship") == ["Zeppelin (thing): airship"]
    with other.db.engine.begin() as c:
        c.execute(text("DELETE FROM kg_entities WHERE name = 'Zeppelin'"))
    assert _snippets(eng, agent, "zeppelin airship") == []
    with other.db.engine.begin() as c:  # superseded (closed): no longer current
        c.execute(text("UPDATE kg_relations SET valid_until = :t"), {"t": T0 + timedelta(days=1)})
    assert _snippets(eng, agent, "works") == []


def test_renaming_an_entity_changes_the_relation_hits_text(two_engines: tuple[Any, Any]) -> None:
    """A relation's text holds its ends' names: a rename (here in place, by raw SQL) moves the
    agent's counter and the relation is shown, and found, by the new name."""
    eng, other = two_engines
    agent = eng.agents.create("ada")
    eng.db.run_write(lambda s: alice_works_at_acme(eng, s, agent.id, T0, "works_at"))
    assert "Alice works at Acme" in _snippets(eng, agent, "works")
    with other.db.engine.begin() as c:
        c.execute(text("UPDATE kg_entities SET name = 'Alicia' WHERE name = 'Alice'"))
    assert _snippets(eng, agent, "works") == ["Alicia works at Acme"]
    assert _snippets(eng, agent, "alicia") == ["Alicia (person): engineer", "Alicia works at Acme"]
    assert _snippets(eng, agent, "alice") == []
    with other.db.engine.begin() as c:  # an end that is no longer current still names the relation
        c.execute(text("UPDATE kg_entities SET valid_until = :t WHERE name = 'Acme'"), {"t": T0})
    assert _snippets(eng, agent, "works") == ["Alicia works at Acme"]
    with other.db.engine.begin() as c:
        c.execute(text("UPDATE kg_entities SET name = 'Acme Corp' WHERE name = 'Acme'"))
    assert _snippets(eng, agent, "acme") == ["Alicia works at Acme Corp"]


def test_user_scopes_and_dates_filter_inside_the_index(make_engine: Any) -> None:
    engine = make_engine(plugins=NO_EMBED)
    agent = engine.agents.create("ada")
    kg = engine.kg

    def _do(s: Any) -> None:
        for user, day in (("", 0), ("u1", 1), ("u2", 2)):
            at = T0 + timedelta(days=day)
            kg.upsert_entity(
                s, agent_id=agent.id, user_id=user, name=f"Ferry {user or 'all'}", entity_type="boat", now=at
            )

    engine.db.run_write(_do)
    assert _snippets(engine, agent, "ferry") == ["Ferry all (boat)"]
    assert _snippets(engine, agent, "ferry", "u1") == ["Ferry u1 (boat)", "Ferry all (boat)"]
    assert _snippets(engine, agent, "ferry", "u3") == ["Ferry all (boat)"]
    assert _snippets(engine, agent, "ferry", "u2", since="2026-01-03") == ["Ferry u2 (boat)"]
    assert _snippets(engine, agent, "ferry", "u2", until="2026-01-02") == ["Ferry all (boat)"]
    assert _snippets(engine, agent, "ferry", "u2", since="2026-01-02", until="2026-01-02") == []
    assert _snippets(engine, agent, "ferry", "u1", since="2026-01-03", until="2026-01-03") == []
    hit = fact_hits(engine, "ferry", agent, "u1", 1)[0]
    assert hit.extra["date"] == (T0 + timedelta(days=1)).isoformat() and hit.scope == "user"


def test_an_unchanged_graph_is_not_read_again(make_engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted at the database driver: after the first search, searches of an unchanged graph
    read no fact and check out no connection of the store's pool (PostgreSQL: one read of the
    counter each, outside the pool; SQLite: not even that, while ``PRAGMA data_version`` says
    nobody committed); the first search after a write reads them."""
    engine = make_engine(plugins=NO_EMBED)
    agent = engine.agents.create("ada")
    engine.db.run_write(lambda s: alice_works_at_acme(engine, s, agent.id, T0, "works_at"))
    seen: list[str] = []
    direct: list[str] = []

    def _count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "kg_" in statement:
            seen.append(statement)

    assert _snippets(engine, agent, "Alice")
    reads = searcher(engine)._reads
    assert (reads is not None) == (engine.db.backend == "postgresql")
    if reads is not None:
        query = reads.query
        monkeypatch.setattr(reads, "query", lambda sql, params: direct.append(sql) or query(sql, params))
    event.listen(engine.db.engine, "before_cursor_execute", _count)
    try:
        for query_text in ("Alice", "Acme engineer", "works at"):
            assert _snippets(engine, agent, query_text)
        assert seen == []  # not even the counter: no pool checkout
        assert len(direct) == (3 if engine.db.backend == "postgresql" else 0)  # the counter
        assert all("kg_versions" in s for s in direct)
        engine.db.run_write(
            lambda s: engine.kg.upsert_entity(
                s, agent_id=agent.id, user_id="", name="Bob", entity_type="person"
            )
        )
        seen.clear()
        assert _snippets(engine, agent, "Bob") == ["Bob (person)"]
        assert [s for s in seen if "FROM kg_entities" in s]  # the listener does see the reads
    finally:
        event.remove(engine.db.engine, "before_cursor_execute", _count)


def test_facts_written_before_the_counter_existed_are_found(
    workspace: Path, database_url: str | None
) -> None:
    """A database whose facts predate migration kg_0002: the migration gives their agent a
    counter, so the first search builds the index from them."""
    db = Database.for_workspace(workspace, database_url)
    build_legacy(db, "0004")  # a pre-split database: the kernel's chain made the KG tables
    with db.engine.begin() as conn:
        legacy_insert(conn, "agents", id="a1", tenant_id="default", name="legacy", display_name="",
                      agent_type="open", status="active", description="", settings="{}",
                      created_at=LEGACY_T0, updated_at=LEGACY_T0)  # fmt: skip
        legacy_insert(conn, "kg_entities", id="e1", tenant_id="default", agent_id="a1", user_id="",
                      name="Quokka", normalized_name="quokka", entity_type="animal", description="",
                      confidence=1.0, properties="{}", source_id="", valid_from=LEGACY_T0,
                      created_at=LEGACY_T0, updated_at=LEGACY_T0)  # fmt: skip
    db.dispose()
    with Engine.open(workspace, database_url, plugins=NO_EMBED) as eng:
        agent = eng.agents.get("legacy")
        assert _snippets(eng, agent, "quokka") == ["Quokka (animal)"]
