"""A memory search's extra tiers (``goclaw_memory_search_extra``) run beside its document search
on PostgreSQL, where both wait on the server, and in the caller's thread, after it, elsewhere;
the hits, their order and a failing tier's warning are the same either way."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from goclaw import hookimpl
from goclaw.contracts.hooks import SearchHit
from tests.memory_helpers import write


class MeetingTier:
    """A tier that, with ``barrier``, waits there for the document search (which waits for it):
    they meet only if they run at the same time."""

    def __init__(self, barrier: threading.Barrier | None = None, fail: bool = False) -> None:
        self.barrier = barrier
        self.fail = fail
        self.threads: list[str] = []

    @hookimpl
    def goclaw_memory_search_extra(self, engine: Any, query: str, agent: Any, user: Any, limit: int) -> Any:
        self.threads.append(threading.current_thread().name)
        if self.barrier is not None:
            self.barrier.wait()
        if self.fail:
            raise RuntimeError("the tier broke")
        return [
            SearchHit(
                id="e1", score=5.0, text="an episode about kettles", path="episodic:s1", tier="episodic"
            )
        ]


def _engine(make_engine: Any, tier: MeetingTier) -> Any:
    eng = make_engine(extra_plugins=[("meeting-tier", tier)], plugins={"embeddings": {"provider": "none"}})
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    write(root, "MEMORY.md", "The kettle is in the left cupboard.\n")
    eng.memory.index("ada")
    return eng


@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_on_postgresql_the_tiers_run_beside_the_document_search(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    barrier = threading.Barrier(2, timeout=20)
    tier = MeetingTier(barrier)
    eng = _engine(make_engine, tier)
    backend = eng.memory.backend
    real = backend.search

    def meets(query: Any) -> Any:
        barrier.wait()  # BrokenBarrierError (the search fails) unless the tier runs meanwhile
        return real(query)

    monkeypatch.setattr(backend, "search", meets)
    hits = eng.memory.search("kettle", "ada")
    assert [(h.tier, h.path) for h in hits] == [("episodic", "episodic:s1"), ("document", "MEMORY.md")]
    assert tier.threads[0].startswith("goclaw-tiers")


def test_elsewhere_they_run_in_the_callers_thread(
    make_engine: Any, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import goclaw_memory.tier_runner as tier_runner

    tier = MeetingTier()
    eng = _engine(make_engine, tier)
    if backend == "postgresql":  # every worker taken: the caller's thread runs them
        monkeypatch.setattr(tier_runner, "WORKERS", 0)
    hits = eng.memory.search("kettle", "ada")
    assert [(h.tier, h.path) for h in hits] == [("episodic", "episodic:s1"), ("document", "MEMORY.md")]
    assert tier.threads == [threading.current_thread().name]


def test_a_failing_tier_is_skipped_with_a_warning_whichever_thread_ran_it(
    make_engine: Any, caplog: pytest.LogCaptureFixture
) -> None:
    eng = _engine(make_engine, MeetingTier(fail=True))
    hits = eng.memory.search("kettle", "ada")
    assert [(h.tier, h.path) for h in hits] == [("document", "MEMORY.md")]
    assert any(
        "meeting-tier failed" in r.getMessage() and "the tier broke" in r.getMessage() for r in caplog.records
    )
