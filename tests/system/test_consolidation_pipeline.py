"""Consolidation end to end, on SQLite and PostgreSQL: sessions → run.completed → ``workers run
--once`` → episodic summary → KG → dedup merge → dreaming document (indexed) → the Memory
Context section in a later prompt. Once with litellm mocked, once with no model at all."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from goclaw.contracts.hooks import PromptRequest
from goclaw_episodic.tables import EpisodicSummary
from goclaw_kg.tables import KGEntity
from goclaw_memory.tables import MemoryDocument
from tests.consolidation_helpers import end_session, mock_litellm, record_session
from tests.helpers import run_cli

SESSIONS = [
    [
        ("user", "Alice Smith will lead Project Atlas and we chose Postgres for storage."),
        ("assistant", "Noted: Alice Smith leads Project Atlas, storage on Postgres."),
    ],
    [
        ("user", "The Atlas Project kickoff with Alice Smith is in Berlin next week."),
        ("assistant", "I will remember the Berlin kickoff."),
    ],
    [("user", "Budget review for Project Atlas moved to Friday."), ("assistant", "Moved to Friday.")],
    [("user", "Alice Smith prefers async standups for Project Atlas."), ("assistant", "Async it is.")],
    [
        ("user", "We decided Postgres replication needs a second replica."),
        ("assistant", "Second replica noted."),
    ],
]


def _cli(workspace: Path, database_url: str | None, *args: str) -> Any:
    result = run_cli(list(args), workspace=workspace, database_url=database_url)
    assert result.code == 0, result.err
    return result


def _run_pipeline(engine: Any, workspace: Path, database_url: str | None) -> Any:
    agent = engine.agents.create("ada")
    for i, messages in enumerate(SESSIONS):
        record_session(engine, agent, f"s{i}", "u1", messages)
        end_session(engine, agent, f"s{i}", "u1")
    # the real CLI drains the queue (its own engine on the same workspace/database)
    out = _cli(workspace, database_url, "workers", "run", "--once", "--json")
    report = json.loads(out.out)
    assert report["dead"] == 0 and report["failed"] == 0
    return agent


def _episodes(engine: Any, agent: Any) -> list[EpisodicSummary]:
    with engine.db.session() as s:
        return list(s.exec(select(EpisodicSummary).where(EpisodicSummary.agent_id == agent.id)))


def _check_common(engine: Any, agent: Any, workspace: Path, database_url: str | None) -> None:
    episodes = _episodes(engine, agent)
    assert sorted(e.source_id for e in episodes) == [f"s{i}:0" for i in range(5)]
    for e in episodes:
        assert e.summary.strip() and e.l0_abstract.strip() and len(e.l0_abstract) <= 200
        assert e.user_id == "u1" and e.embedding_dim == 256  # the default static embedder
        assert e.expires_at is not None and 89 <= (e.expires_at - e.created_at).days <= 90
    # dreaming: 5 unpromoted summaries -> one dated document, indexed, all promoted
    assert all(e.promoted_at is not None for e in episodes)
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    dream = engine.agent_dir(agent) / "users" / "u1" / "memory" / "dreams" / f"{today}.md"
    assert dream.is_file()
    with engine.db.session() as s:
        docs = [d.path for d in s.exec(select(MemoryDocument).where(MemoryDocument.agent_id == agent.id))]
    assert any(p.endswith(f"dreams/{today}.md") for p in docs), docs
    # KG listing through the CLI
    ents = json.loads(
        _cli(workspace, database_url, "kg", "entities", "--agent", "ada", "--user", "u1", "--json").out
    )
    names = {e["name"] for e in ents}
    assert {"Alice Smith", "Postgres"} <= names
    rels = json.loads(
        _cli(workspace, database_url, "kg", "relations", "--agent", "ada", "--user", "u1", "--json").out
    )
    assert rels and all(r["valid_until"] is None for r in rels)
    # a later prompt gets the Memory Context section (trivial messages do not)
    result = engine.prompt.build(
        PromptRequest(agent="ada", user="u1", message="Who leads Project Atlas again?")
    )
    assert "## Memory Context" in result.prompt
    section = result.prompt.split("## Memory Context", 1)[1]
    assert "Atlas" in section.split("\n## ", 1)[0]
    assert (
        "## Memory Context"
        not in engine.prompt.build(PromptRequest(agent="ada", user="u1", message="ok thanks!")).prompt
    )
    # another user's prompt never sees u1's episodes
    assert (
        "## Memory Context"
        not in engine.prompt.build(
            PromptRequest(agent="ada", user="u2", message="Who leads Project Atlas again?")
        ).prompt
    )
    # replay of every run.completed creates nothing new
    before = len(_episodes(engine, agent))
    engine.events.retry(dead_only=False)
    _cli(workspace, database_url, "workers", "run", "--once")
    assert len(_episodes(engine, agent)) == before
    with engine.db.session() as s:
        current = s.exec(
            select(KGEntity).where(KGEntity.agent_id == agent.id, KGEntity.valid_until.is_(None))
        ).all()  # type: ignore[union-attr]
    assert len({(e.normalized_name, e.entity_type) for e in current}) == len(current)
    assert dream.read_text().count("<!-- goclaw:dream") == 1


def test_end_to_end_with_mocked_llm(
    make_engine: Any, workspace: Path, database_url: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = mock_litellm(monkeypatch)
    (workspace / "goclaw.toml").write_text('[plugins.llm]\nmodel = "gpt-4o-mini"\n')
    engine = make_engine()
    # the CLI runs in this process, so the mock covers its calls too
    agent = _run_pipeline(engine, workspace, database_url)
    systems = [c[0]["content"][:20] for c in calls]
    assert any(s.startswith("You write episodic") for s in systems)
    assert any(s.startswith("Extract a knowledge") for s in systems)
    assert any(s.startswith("You consolidate") for s in systems)
    episodes = _episodes(engine, agent)
    assert all("(mocked summary)" in e.summary for e in episodes)
    _check_common(engine, agent, workspace, database_url)
    # the mocked extraction typed entities; "Atlas Project" was merged into "Project Atlas"
    with engine.db.session() as s:
        rows = s.exec(select(KGEntity).where(KGEntity.agent_id == agent.id)).all()
    current = {e.name: e for e in rows if e.valid_until is None}
    merged = [e for e in rows if e.merged_into is not None]
    assert "Project Atlas" in current and "Atlas Project" not in current
    assert [m.name for m in merged] == ["Atlas Project"] and merged[0].merged_into == current[
        "Project Atlas"
    ].id
    assert current["Alice Smith"].entity_type == "person"
    assert "Atlas Project" in current["Project Atlas"].properties.get("aliases", [])
    rels = engine.kg.relations("ada", "u1")
    leads = [(n[r.source_entity_id], n[r.target_entity_id]) for r, n in rels if r.relation_type == "leads"]
    assert leads == [("Alice Smith", "Project Atlas")]  # re-pointed, deduplicated
    dream = next((engine.agent_dir(agent) / "users" / "u1" / "memory" / "dreams").glob("*.md"))
    assert "MOCKED DREAM" in dream.read_text()


def test_end_to_end_without_a_model(make_engine: Any, workspace: Path, database_url: str | None) -> None:
    engine = make_engine()
    assert engine.llm() is None
    agent = _run_pipeline(engine, workspace, database_url)
    episodes = {e.source_id: e for e in _episodes(engine, agent)}
    first = episodes["s0:0"]
    # the extractive fallback keeps the facts and names
    assert "Alice Smith" in first.summary and "Project Atlas" in first.summary
    assert "Alice Smith" in first.key_topics and "Project Atlas" in first.key_topics
    _check_common(engine, agent, workspace, database_url)
    ents = {e.name: e for e in engine.kg.entities("ada", "u1")}
    assert {"Project Atlas", "Alice Smith", "Postgres", "Berlin"} <= set(ents)
    assert ents["Postgres"].entity_type == "technology"
    dream = next((engine.agent_dir(agent) / "users" / "u1" / "memory" / "dreams").glob("*.md")).read_text()
    assert "Recurring topics" in dream and "Project Atlas" in dream


def test_memory_search_has_episodic_tier_and_expand(
    make_engine: Any, workspace: Path, database_url: str | None
) -> None:
    engine = make_engine()
    agent = _run_pipeline(engine, workspace, database_url)
    hits = engine.memory.search("Berlin kickoff", "ada", "u1")
    episodic = [h for h in hits if getattr(h, "tier", None) == "episodic"]
    assert episodic, hits
    tool = {t.name: t for t in engine.hooks.tools(engine)}["memory_expand"]
    top = _episodes(engine, agent)
    target = next(e for e in top if e.source_id == "s1:0")
    data = tool.func(id=target.id, agent="ada", user="u1")
    assert data["episode"]["summary"] == target.summary
    assert {"Berlin"} <= {e["name"] for e in data["entities"]}
    from goclaw.errors import NotFoundError

    with pytest.raises(NotFoundError):
        tool.func(id=target.id, agent="ada", user="u2")  # another user's memory stays hidden


def test_retention_prunes_expired_rows(make_engine: Any, workspace: Path, database_url: str | None) -> None:
    engine = make_engine(plugins={"episodic": {"dreaming_enabled": False}})
    agent = engine.agents.create("ada")
    engine.agents.update_settings("ada", episodic_ttl_days=1)
    record_session(engine, agent, "old", "", [("user", "Remember the Zebra protocol for Project Kite.")])
    end_session(engine, agent, "old", "")
    _cli(workspace, database_url, "workers", "run", "--once")
    (ep,) = _episodes(engine, agent)
    assert (ep.expires_at - ep.created_at).days == 1  # per-agent episodic_ttl_days
    store = engine.service("episodic")
    assert store.prune_expired(now=ep.created_at) == 0
    assert store.prune_expired(now=ep.expires_at) == 1
    assert _episodes(engine, agent) == []


def test_session_cli_to_episodes(engine: Any, workspace: Path, database_url: str | None) -> None:
    engine.agents.create("ada")
    for role, text in [
        ("user", "Please remember that Orion launches on May 4 with Vega support."),
        ("assistant", "Got it: Orion launches May 4, Vega supported."),
    ]:
        _cli(
            workspace,
            database_url,
            "session",
            "append",
            "--agent",
            "ada",
            "--user",
            "u1",
            "--key",
            "c1",
            "--role",
            role,
            text,
        )
    ended = json.loads(_cli(workspace, database_url, "session", "end", "--key", "c1", "--json").out)
    assert ended["session_key"] == "c1"
    status = json.loads(_cli(workspace, database_url, "workers", "status", "--json").out)
    assert status["deliveries"]["episodic"]["pending"] == 1
    _cli(workspace, database_url, "workers", "run", "--once")
    eps = json.loads(
        _cli(workspace, database_url, "session", "episodes", "--agent", "ada", "--user", "u1", "--json").out
    )
    assert [e["source_id"] for e in eps] == ["c1:0"] and "Orion" in eps[0]["summary"]
    assert (
        json.loads(_cli(workspace, database_url, "session", "episodes", "--agent", "ada", "--json").out) == []
    )
    bad = run_cli(
        ["session", "append", "--agent", "nobody", "--key", "x", "--role", "user", "hi"],
        workspace=workspace,
        database_url=database_url,
    )
    assert bad.code != 0 and bad.err.startswith("error:")
