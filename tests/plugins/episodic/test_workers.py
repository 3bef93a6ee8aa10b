"""Dreaming rules, auto-injection limits, episodic idempotence."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlmodel import select

from goclaw.contracts.hooks import PromptRequest
from goclaw.contracts.host import PromptContext
from goclaw.contracts.memory import NewEpisode
from goclaw.contracts.store import WorkerState
from goclaw.events import WorkerRunner
from goclaw_episodic.autoinject import HEADER, MemoryContextSection
from goclaw_episodic.store import EpisodicStore
from goclaw_episodic.tables import EpisodicSummary
from goclaw_episodic.text import is_trivial, l0_abstract


def _add_episodes(engine: Any, agent: Any, n: int, start: int = 0, user: str = "u1") -> None:
    store = EpisodicStore(engine)
    for i in range(start, start + n):
        row = store.build(
            NewEpisode(
                agent_id=agent.id,
                user_id=user,
                session_key=f"k{i}",
                source_id=f"k{i}:0",
                summary=f"Session {i} discussed the Orion migration plan and the Vega dashboard in detail.",
            )
        )
        assert store.insert(row) is not None


def _dreams(engine: Any, agent: Any) -> list[Any]:
    folder = engine.agent_dir(agent) / "users" / "u1" / "memory" / "dreams"
    return sorted(folder.glob("*.md")) if folder.exists() else []


def _promoted(engine: Any) -> int:
    with engine.db.session() as s:
        return sum(1 for e in s.exec(select(EpisodicSummary)) if e.promoted_at is not None)


def test_dreaming_threshold_batch_and_debounce(make_engine: Any) -> None:
    engine = make_engine(plugins={"episodic": {"dreaming_batch": 10}})
    agent = engine.agents.create("ada")
    only = ["dreaming"]
    _add_episodes(engine, agent, 4)
    WorkerRunner(engine, workers=only).run_once()
    assert _dreams(engine, agent) == [] and _promoted(engine) == 0  # fewer than 5: nothing
    _add_episodes(engine, agent, 8, start=4)  # 12 unpromoted now
    report = WorkerRunner(engine, workers=only).run_once()
    (dream,) = _dreams(engine, agent)
    assert _promoted(engine) == 10  # one run, at most 10 per batch
    text = dream.read_text()
    assert text.count("<!-- goclaw:dream") == 1 and "Orion" in text
    assert report.deferred == 0  # 2 left over: below the threshold, nothing waits
    # 3 more arrive (5 unpromoted) inside the 10-minute window: deferred, not run
    _add_episodes(engine, agent, 3, start=12)
    report = WorkerRunner(engine, workers=only).run_once()
    assert report.deferred >= 1 and _promoted(engine) == 10
    # once the window has passed, the deferred events run
    with engine.db.write() as s:
        state = s.get(WorkerState, ("dreaming", f"{agent.id}:u1"))
        from datetime import datetime

        last = datetime.fromisoformat(state.value["last_run"]) - timedelta(minutes=11)
        state.value = {"last_run": last.isoformat()}
        s.add(state)
        from goclaw.store.models import EventDelivery

        for d in s.exec(select(EventDelivery).where(EventDelivery.status == "pending")):
            d.available_at = d.available_at - timedelta(minutes=11)
            s.add(d)
    WorkerRunner(engine, workers=only).run_once()
    assert _promoted(engine) == 15
    assert _dreams(engine, agent)[0].read_text().count("<!-- goclaw:dream") == 2


def test_dreaming_replay_writes_nothing_twice(make_engine: Any) -> None:
    engine = make_engine()
    agent = engine.agents.create("ada")
    _add_episodes(engine, agent, 5)
    from goclaw_episodic.dreaming import DreamingWorker

    with engine.db.session() as s:
        batch = list(s.exec(select(EpisodicSummary)))
    worker = DreamingWorker()
    path = worker.dream(engine, agent, "u1", batch)
    first = path.read_text()
    with engine.db.write() as s:  # simulate a crash after the write, before promotion
        for e in s.exec(select(EpisodicSummary)):
            e.promoted_at = None
            s.add(e)
    assert worker.dream(engine, agent, "u1", batch) == path
    assert path.read_text() == first and _promoted(engine) == 5


def test_episodic_replay_creates_no_duplicate(make_engine: Any) -> None:
    engine = make_engine()
    agent = engine.agents.create("ada")
    store = EpisodicStore(engine)
    new = NewEpisode(
        agent_id=agent.id,
        user_id="",
        session_key="k",
        source_id="k:0",
        summary="We agreed that Nova ships in May after the security review.",
    )
    assert store.insert(store.build(new)) is not None
    assert store.insert(store.build(new)) is None  # same source_id: nothing written
    with engine.db.session() as s:
        assert len(s.exec(select(EpisodicSummary)).all()) == 1


def test_trivial_filter_and_l0() -> None:
    for msg in ("hi", "ok thanks!", "Thank you so much", "good morning :)", "", "yes please"):
        assert is_trivial(msg), msg
    for msg in ("what did we decide about Orion?", "remind me of the Vega dashboard plan"):
        assert not is_trivial(msg), msg
    assert (
        l0_abstract("Short. This is the first real sentence here. Another one.")
        == "This is the first real sentence here."
    )
    assert len(l0_abstract("word " * 200)) <= 200


def _ctx(engine: Any, agent: Any, message: str, user: str = "u1") -> PromptContext:
    return PromptContext(
        engine=engine,
        request=PromptRequest(agent="ada", user=user, message=message),
        agent=agent,
        user=user,
        mode="full",
    )


def test_auto_inject_threshold_budget_and_settings(make_engine: Any) -> None:
    engine = make_engine()
    agent = engine.agents.create("ada")
    _add_episodes(engine, agent, 8)
    section = MemoryContextSection()
    text = section.render(_ctx(engine, agent, "How is the Orion migration going?"))
    assert text is not None and text.startswith(HEADER.rstrip("\n"))
    assert engine.tokenizer.count(text) <= 200  # auto_inject_max_tokens, in tokens
    assert 1 <= text.count("\n- ") <= 5
    assert section.render(_ctx(engine, agent, "ok thanks")) is None  # trivial
    assert section.render(_ctx(engine, agent, "Recipe for banana bread with walnuts")) is None  # irrelevant
    engine.agents.update_settings("ada", auto_inject_max_tokens=40)
    agent = engine.agents.get("ada")
    small = section.render(_ctx(engine, agent, "How is the Orion migration going?"))
    assert small is None or engine.tokenizer.count(small) <= 40
    engine.agents.update_settings("ada", auto_inject_max_tokens=200, auto_inject_enabled=False)
    agent = engine.agents.get("ada")
    assert section.render(_ctx(engine, agent, "How is the Orion migration going?")) is None
    engine.agents.update_settings("ada", auto_inject_enabled=True, auto_inject_threshold=0.99)
    agent = engine.agents.get("ada")
    assert section.render(_ctx(engine, agent, "How is the Orion migration going?")) is None


def test_consolidation_disabled_per_agent(make_engine: Any) -> None:
    from tests.consolidation_helpers import end_session, record_session

    engine = make_engine()
    agent = engine.agents.create("ada", settings={"consolidation_enabled": False})
    record_session(engine, agent, "k", "", [("user", "Remember that Orion ships in June.")])
    end_session(engine, agent, "k", "")
    WorkerRunner(engine).run_once()
    with engine.db.session() as s:
        assert s.exec(select(EpisodicSummary)).all() == []
