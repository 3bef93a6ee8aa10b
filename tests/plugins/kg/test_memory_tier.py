"""Knowledge-graph facts in ``memory_search``: a tier of its own (``tier="kg"``) with ids that
``memory_get`` expands, scoped to the caller, through the memory plugin's hooks only."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from goclaw.contracts.tools import ToolContext
from goclaw.errors import NotFoundError
from tests.consolidation_helpers import alice_works_at_acme
from tests.memory_helpers import write

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _seed(engine: Any) -> Any:
    agent = engine.agents.create("ada")
    kg = engine.kg

    def _do(s: Any) -> None:
        alice_works_at_acme(engine, s, agent.id, T0, "works_at")
        kg.upsert_entity(s, agent_id=agent.id, user_id="bob", name="Zeppelin", entity_type="thing", now=T0)

    engine.db.run_write(_do)
    write(engine.agent_dir(agent), "MEMORY.md", "# Notes\n\nThe office plant needs water.\n")
    engine.memory.index("ada")
    return agent


def test_memory_search_finds_kg_facts_with_expandable_ids(make_engine: Any) -> None:
    engine = make_engine()
    _seed(engine)
    hits = engine.memory.search("where does Alice work", "ada")
    facts = [h for h in hits if h.tier == "kg"]
    assert facts and facts[0].snippet == "Alice works at Acme" and facts[0].id.startswith("kg:r:")
    assert all(h.id for h in hits)  # every hit has an id, documents and facts alike
    ctx = ToolContext(agent="ada")
    tool = engine.tools.call("memory_search", {"query": "Alice engineer"}, ctx)
    rows = tool.data["hits"]
    entity = next(r for r in rows if r["tier"] == "kg" and r["id"].startswith("kg:e:"))
    got = engine.tools.call("memory_get", {"id": entity["id"]}, ctx)
    assert got.data["entity"]["name"] == "Alice"
    assert [r["target"] for r in got.data["relations"]] == ["Acme"]
    relation = engine.tools.call("memory_get", {"id": facts[0].id}, ctx).data["relation"]
    assert (relation["source"], relation["target"]) == ("Alice", "Acme")


def test_kg_facts_stay_in_their_scope_and_filters(make_engine: Any) -> None:
    engine = make_engine()
    _seed(engine)
    assert not [h for h in engine.memory.search("Zeppelin", "ada") if h.tier == "kg"]
    mine = [h for h in engine.memory.search("Zeppelin", "ada", "bob") if h.tier == "kg"]
    assert [h.scope for h in mine] == ["user"]
    with pytest.raises(NotFoundError):
        engine.tools.call(
            "memory_get", {"id": mine[0].id}, ToolContext(agent="ada", user="eve"), raise_errors=True
        )
    # dated by valid_from; no path or tags, so a path filter leaves them out
    dated = engine.memory.search("Alice Acme", "ada", filters={"since": "2026-01-01", "until": "2026-01-01"})
    assert dated and all(h.tier == "kg" for h in dated)
    assert not engine.memory.search("Alice Acme", "ada", filters={"since": "2026-01-02"})
    assert not [h for h in engine.memory.search("Alice", "ada", filters={"path": "kg"}) if h.tier == "kg"]


def test_the_memory_context_does_not_search_kg_facts(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The automatic Memory Context (every prompt) does not inject facts, so it does not make
    the knowledge graph search them: the tier is asked with ``for_prompt`` and does no work."""
    from goclaw_episodic.autoinject import recalled
    from goclaw_kg import memory_tier

    engine = make_engine()
    _seed(engine)
    agent = engine.agents.get("ada")
    asked: list[str] = []
    real = memory_tier.fact_hits
    monkeypatch.setattr(memory_tier, "fact_hits", lambda *a, **k: asked.append("kg") or real(*a, **k))
    recalled(engine, agent, None, "where does Alice work", None, 5)
    assert asked == []
    assert [h for h in engine.memory.search("where does Alice work", "ada") if h.tier == "kg"]
    assert asked == ["kg"]  # memory_search still asks it


def test_a_date_filter_is_applied_before_the_tier_cuts_to_the_limit(make_engine: Any) -> None:
    """More matching facts than ``limit``, the older ones ranked last: a date range that keeps
    only the older ones still fills the limit with them (filtering the tier's best ``limit``
    afterwards would leave none)."""
    engine = make_engine()
    agent = engine.agents.create("ada")
    kg = engine.kg
    later = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def _do(s: Any) -> None:
        for i in range(3):
            kg.upsert_entity(
                s, agent_id=agent.id, user_id="", name=f"Kestrel {i}", entity_type="bird", now=T0
            )
        for i in range(12):
            kg.upsert_entity(
                s, agent_id=agent.id, user_id="", name=f"Kestrel {i + 3}", entity_type="bird", now=later
            )

    engine.db.run_write(_do)
    window = {"since": "2026-01-01", "until": "2026-01-01"}
    old = [h for h in engine.memory.search("kestrel bird", "ada", limit=3, filters=window) if h.tier == "kg"]
    assert sorted(h.snippet for h in old) == ["Kestrel 0 (bird)", "Kestrel 1 (bird)", "Kestrel 2 (bird)"]
    recent = [
        h for h in engine.memory.search("kestrel bird", "ada", limit=3, filters={"since": "2026-02-01"})
    ]
    assert len(recent) == 3 and all(h.snippet not in {s.snippet for s in old} for h in recent)
