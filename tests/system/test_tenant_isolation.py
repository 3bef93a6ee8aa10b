"""Another tenant never reads episodic summaries or KG facts by agent id.

``memory search`` already answers "unknown agent" for an agent of another tenant; episodes and
the knowledge graph must do the same on the CLI and through the Python services."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from goclaw.contracts.memory import NewEpisode
from goclaw.errors import NotFoundError
from goclaw_episodic.plugin import memory_expand
from goclaw_episodic.store import EpisodicStore
from goclaw_kg.tables import KGDedupCandidate
from tests.helpers import run_cli

SECRET = "Alice keeps the launch codes in the blue binder"


def _seed(engine: Any) -> tuple[Any, str, str]:
    agent = engine.agents.create("owner-agent", "open")
    store = EpisodicStore(engine)
    row = store.insert(
        store.build(
            NewEpisode(agent_id=agent.id, user_id="alice", session_key="s1", summary=SECRET, source_id="s1:0")
        ),
        publish=False,
    )
    assert row is not None
    kg = engine.kg

    def _do(s: Any) -> str:
        ent, _ = kg.upsert_entity(
            s, agent_id=agent.id, user_id="alice", name="Blue Binder", entity_type="thing"
        )
        other, _ = kg.upsert_entity(
            s, agent_id=agent.id, user_id="alice", name="Blue Binders", entity_type="thing"
        )
        s.add(
            KGDedupCandidate(
                agent_id=agent.id,
                user_id="alice",
                entity_a_id=ent.id,
                entity_b_id=other.id,
                cosine=0.9,
                name_similarity=0.95,
            )
        )
        return str(ent.id)

    entity_id = engine.db.run_write(_do)
    return agent, row.id, entity_id


def test_other_tenant_cannot_read_episodes_or_kg_through_services(make_engine: Any) -> None:
    owner = make_engine()
    agent, episode_id, entity_id = _seed(owner)
    # the owner's tenant sees everything
    assert [r.summary for r in owner.service("episodic").list(agent.id, "alice")] == [SECRET]
    assert owner.kg.entities(agent.id, "alice")
    assert owner.service("episodic").search(agent.id, "alice", "launch codes binder")
    assert len(owner.kg.candidates(agent.id)) == 1

    intruder = make_engine(tenant_id="x")
    assert intruder.service("episodic").list(agent.id, "alice") == []
    assert intruder.service("episodic").search(agent.id, "alice", "launch codes binder") == []
    assert intruder.service("episodic").hits(agent.id, "alice", "launch codes", 5) == []
    for call in (
        lambda: intruder.kg.entities(agent.id, "alice"),
        lambda: intruder.kg.relations(agent.id, "alice"),
        lambda: intruder.kg.entities("owner-agent", "alice"),
        lambda: intruder.kg.candidates(agent.id),
        lambda: intruder.kg.supersede_entity(entity_id, name="Stolen"),
        lambda: memory_expand(intruder, episode_id, agent.id, "alice"),
    ):
        with pytest.raises(NotFoundError):
            call()
    assert intruder.kg.candidates(None, None) == []
    cand_id = owner.kg.candidates(None)[0]["id"]
    with pytest.raises(NotFoundError):
        intruder.kg.review_candidate(cand_id, accept=True)
    # nothing was changed by the attempts
    assert [e.name for e in owner.kg.entities(agent.id, "alice")] == ["Blue Binder", "Blue Binders"]


def test_other_tenant_cli_gets_one_line_refusal(
    workspace: Path, database_url: str | None, make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner = make_engine()
    agent, _episode_id, _entity_id = _seed(owner)
    owner.close()
    ok = run_cli(
        ["session", "episodes", "-a", agent.id, "-u", "alice", "--json"],
        workspace=workspace,
        database_url=database_url,
    )
    assert ok.code == 0 and SECRET in ok.out

    monkeypatch.setenv("GOCLAW_TENANT_ID", "x")
    for args in (
        ["session", "episodes", "-a", agent.id, "-u", "alice", "--json"],
        ["kg", "entities", "-a", agent.id, "-u", "alice", "--json"],
        ["kg", "relations", "-a", agent.id, "-u", "alice", "--json"],
        ["memory", "search", "launch", "-a", agent.id, "-u", "alice", "--json"],
    ):
        res = run_cli(args, workspace=workspace, database_url=database_url)
        assert res.code != 0, (args, res.out)
        assert SECRET not in res.out and "Blue Binder" not in res.out
        assert "unknown agent" in res.err and len(res.err.strip().splitlines()) == 1, res.err
    res = run_cli(
        ["kg", "candidates", "--status", "all", "--json"], workspace=workspace, database_url=database_url
    )
    assert res.code == 0 and json.loads(res.out) == []


def test_other_tenant_cannot_list_or_review_channel_memory(make_engine: Any) -> None:
    owner = make_engine()
    owner.agents.create("owner-agent", "open")
    channel = owner.service("channel_memory")
    channel.configure("owner-agent", "general", enabled=True)
    channel.ingest(
        "owner-agent", "general", [{"user": "u1", "text": "We agreed to ship Project Kite on Friday."}]
    )
    items = channel.items()
    assert items
    intruder = make_engine(tenant_id="x").service("channel_memory")
    assert intruder.items() == []
    for review in (intruder.approve, intruder.reject):
        with pytest.raises(NotFoundError):
            review(items[0]["id"])
    assert channel.items()[0]["status"] == "pending"


def test_other_tenant_cannot_end_a_session_on_the_cli(
    workspace: Path, database_url: str | None, make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner = make_engine()
    owner.agents.create("owner-agent", "open")
    owner.sessions.append("owner-agent", "agent:owner-agent:s9", "user", "hello", user="alice")
    monkeypatch.setenv("GOCLAW_TENANT_ID", "x")
    res = run_cli(
        ["session", "end", "--key", "agent:owner-agent:s9"], workspace=workspace, database_url=database_url
    )
    assert res.code != 0 and "unknown session" in res.err and len(res.err.strip().splitlines()) == 1
    assert owner.sessions.get("agent:owner-agent:s9").status == "open"
    monkeypatch.delenv("GOCLAW_TENANT_ID")
    res = run_cli(
        ["session", "end", "--key", "agent:owner-agent:s9"], workspace=workspace, database_url=database_url
    )
    assert res.code == 0, res.err
