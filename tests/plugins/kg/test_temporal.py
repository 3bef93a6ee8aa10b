"""Temporal knowledge graph (validity intervals, nothing deleted) and safe dedup."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlmodel import select

from goclaw.errors import ValidationError
from goclaw_kg.dedup import DedupWorker, decide
from goclaw_kg.settings import KGSettings
from goclaw_kg.similarity import jaro_winkler, name_similarity
from goclaw_kg.tables import KGDedupCandidate, KGEntity, KGRelation
from tests.consolidation_helpers import alice_works_at_acme, kg_entity
from tests.helpers import run_cli

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
T1 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)  # the supersession boundary


def _seed(engine: Any) -> tuple[Any, KGEntity, KGEntity, KGEntity, KGRelation]:
    agent = engine.agents.create("ada")
    kg = engine.kg

    def _do(s: Any) -> tuple[KGEntity, KGEntity, KGEntity, KGRelation]:
        alice, acme, rel = alice_works_at_acme(engine, s, agent.id, T0, "works at")
        globex, _ = kg.upsert_entity(
            s, agent_id=agent.id, user_id="", name="Globex", entity_type="organization", now=T0
        )
        return alice, acme, globex, rel

    alice, acme, globex, rel = engine.db.run_write(_do)
    return agent, alice, acme, globex, rel


def _targets(engine: Any, as_of: datetime | None) -> list[str]:
    return sorted(
        f"{n[r.source_entity_id]} {r.relation_type} {n[r.target_entity_id]}"
        for r, n in engine.kg.relations("ada", as_of=as_of)
    )


def test_as_of_before_at_and_after_a_relation_supersession(engine: Any) -> None:
    _agent, _alice, _acme, globex, rel = _seed(engine)
    new = engine.kg.supersede_relation(rel.id, target_id=globex.id, at=T1)
    assert _targets(engine, T0 - timedelta(seconds=1)) == []  # before the fact existed
    assert _targets(engine, T0) == ["Alice works_at Acme"]  # valid_from is inclusive
    assert _targets(engine, T1 - timedelta(microseconds=1)) == ["Alice works_at Acme"]
    assert _targets(engine, T1) == ["Alice works_at Globex"]  # valid_until is exclusive
    assert _targets(engine, T1 + timedelta(days=30)) == ["Alice works_at Globex"]
    assert _targets(engine, None) == ["Alice works_at Globex"]  # current only
    with engine.db.session() as s:  # nothing deleted: the old row is closed, not gone
        old = s.get(KGRelation, rel.id)
        assert old is not None and old.valid_until == T1 and new.valid_from == T1
    with pytest.raises(ValidationError):
        engine.kg.supersede_relation(rel.id, target_id=globex.id, at=T1)  # not current any more


def test_entity_supersession_moves_relations_and_keeps_history(engine: Any) -> None:
    _agent, alice, _acme, _globex, _rel = _seed(engine)
    new = engine.kg.supersede_entity(alice.id, description="engineering manager", at=T1)
    before = {e.name: e for e in engine.kg.entities("ada", as_of=T1 - timedelta(seconds=1))}
    after = {e.name: e for e in engine.kg.entities("ada", as_of=T1)}
    assert before["Alice"].id == alice.id and before["Alice"].description == "engineer"
    assert after["Alice"].id == new.id and after["Alice"].description == "engineering manager"
    # the relation follows the new row from T1 on, and still points at the old one before
    (r_before,) = [r for r, _ in engine.kg.relations("ada", as_of=T1 - timedelta(seconds=1))]
    (r_after,) = [r for r, _ in engine.kg.relations("ada", as_of=T1)]
    assert r_before.source_entity_id == alice.id and r_after.source_entity_id == new.id
    history = engine.kg.entities("ada", include_history=True)
    assert len([e for e in history if e.name == "Alice"]) == 2


def test_exclusive_relation_types_supersede_automatically(engine: Any) -> None:
    agent, alice, _acme, globex, _rel = _seed(engine)

    def _do(s: Any) -> None:
        a, g = s.get(KGEntity, alice.id), s.get(KGEntity, globex.id)
        engine.kg.upsert_relation(
            s,
            agent_id=agent.id,
            user_id="",
            source=a,
            target=g,
            relation_type="works_at",
            exclusive=True,
            now=T1,
        )

    engine.db.run_write(_do)
    assert _targets(engine, T1) == ["Alice works_at Globex"]
    assert _targets(engine, T0) == ["Alice works_at Acme"]


def test_cli_as_of(engine: Any, workspace: Path, database_url: str | None) -> None:
    _agent, _alice, _acme, globex, rel = _seed(engine)
    engine.kg.supersede_relation(rel.id, target_id=globex.id, at=T1)

    def rels(at: str) -> list[str]:
        r = run_cli(
            ["kg", "relations", "--agent", "ada", "--as-of", at, "--json"],
            workspace=workspace,
            database_url=database_url,
        )
        assert r.code == 0, r.err
        return [x["target"] for x in json.loads(r.out)]

    assert rels("2026-02-01T00:00:00Z") == ["Acme"]
    assert rels("2026-03-01T12:00:00+00:00") == ["Globex"]
    bad = run_cli(
        ["kg", "entities", "--agent", "ada", "--as-of", "yesterday"],
        workspace=workspace,
        database_url=database_url,
    )
    assert bad.code != 0 and bad.err.startswith("error:") and "Traceback" not in bad.err


# ------------------------------------------------------------------------------ dedup safety


def test_name_similarity_examples() -> None:
    assert jaro_winkler("martha", "marhta") == pytest.approx(0.9611, abs=1e-3)  # textbook value
    assert name_similarity("Open AI", "OpenAI") == 1.0
    assert name_similarity("Atlas Project", "Project Atlas") == 1.0
    assert 0.9 < name_similarity("Jon Smith", "John Smith") < KGSettings().dedup_auto_merge_name
    assert name_similarity("Berlin", "Munich") < 0.6


def test_decision_gates_are_safe() -> None:
    cfg = KGSettings()
    assert decide(0.99, 1.0, cfg) == "merge"
    assert decide(0.99, 0.96, cfg) == "candidate"  # near-identical vectors, different names
    assert decide(0.90, 1.0, cfg) == "candidate"  # same name, vectors disagree
    assert decide(0.60, 0.50, cfg) == "distinct"


def test_dedup_worker_merges_only_same_type_near_identicals(engine: Any) -> None:
    agent = engine.agents.create("ada")
    a = kg_entity(engine, agent, "Project Atlas", "project", [1, 0, 0], conf=0.9)
    b = kg_entity(engine, agent, "Atlas Project", "project", [1, 0.01, 0])
    c = kg_entity(engine, agent, "Atlas project", "place", [1, 0, 0])  # other real type: only proposed
    d = kg_entity(engine, agent, "Jon Smith", "person", [0, 1, 0])
    e = kg_entity(engine, agent, "John Smith", "person", [0, 1, 0.02])  # likely different people
    event = SimpleNamespace(payload={"entity_ids": [b, c, e]})
    DedupWorker().handle(event, engine)
    with engine.db.session() as s:
        rows = {r.id: r for r in s.exec(select(KGEntity))}
        cands = s.exec(select(KGDedupCandidate)).all()
    assert rows[b].merged_into == a and rows[b].valid_until is not None  # closed, not deleted
    assert rows[a].valid_until is None and rows[c].valid_until is None and rows[c].merged_into is None
    assert rows[d].valid_until is None and rows[e].valid_until is None
    assert sorted((x.entity_a_id, x.entity_b_id) for x in cands) == sorted(
        [tuple(sorted((a, c))), tuple(sorted((d, e)))]
    )
    # review: the candidate can be rejected (stays distinct) ...
    (cand,) = [x for x in engine.kg.candidates("ada") if {x["entity_a_id"], x["entity_b_id"]} == {d, e}]
    assert engine.kg.review_candidate(cand["id"], accept=False)["status"] == "rejected"
    with pytest.raises(ValidationError):
        engine.kg.merge(a, c)  # ... and a different-type merge is refused outright


def test_facts_for_episode_finds_later_mentions_only(make_engine: Any) -> None:
    """The summary's own entities and those a later summary mentioned again (``episodic_ids``),
    selected in the database (loading every current entity of every agent costs 1.3 s a call
    at 20,000 entities) and still exact: an id that is a substring of another does not match."""
    engine = make_engine(plugins={"embeddings": {"provider": "none"}})
    ada, bob = engine.agents.create("ada"), engine.agents.create("bob")
    ep1, ep2 = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6", "f6e5d4c3b2a1f6e5d4c3b2a1f6e5d4c3"

    def _do(s: Any) -> None:
        engine.kg.upsert_entity(
            s, agent_id=ada.id, user_id="", name="Atlas", entity_type="project", episodic_id=ep1
        )
        engine.kg.upsert_entity(
            s, agent_id=ada.id, user_id="", name="Atlas", entity_type="project", episodic_id=ep2
        )
        engine.kg.upsert_entity(
            s, agent_id=ada.id, user_id="", name="Orion", entity_type="project", episodic_id=ep2
        )
        engine.kg.upsert_entity(
            s, agent_id=bob.id, user_id="", name="Vega", entity_type="project", episodic_id="x_" + ep1
        )

    engine.db.run_write(_do)
    assert sorted(e.name for e in engine.kg.facts_for_episode(ep1)[0]) == ["Atlas"]
    assert sorted(e.name for e in engine.kg.facts_for_episode(ep2)[0]) == ["Atlas", "Orion"]
    assert engine.kg.facts_for_episode(ep1[:8])[0] == []
