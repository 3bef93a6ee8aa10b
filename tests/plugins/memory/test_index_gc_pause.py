"""An index run pauses the cyclic garbage collector and restores it as it was (for
indexing speed), nested and concurrent runs included."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from goclaw_memory.indexer import paused_gc
from tests.memory_helpers import write


@pytest.fixture
def gc_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_while_indexing_and_restored_after(make_engine: Any, gc_enabled: None) -> None:
    eng = make_engine()
    eng.agents.create("ada")
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    write(root, "memory/a.md", "Rollout of TCK-4471 is blocked on the printer outage.\n")
    seen: list[bool] = []
    eng.memory.index("ada", progress=lambda *_a: seen.append(gc.isenabled()))
    assert seen and not any(seen)  # paused for the whole run
    assert gc.isenabled()  # and back on after it
    write(root, "memory/b.md", "A second note.\n")
    gc.disable()
    try:
        eng.memory.index("ada")
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()


def test_nested_and_concurrent_pauses_restore_once(gc_enabled: None) -> None:
    inner_done = threading.Event()
    release = threading.Event()

    def other_run() -> None:
        with paused_gc():
            inner_done.set()
            release.wait(10)

    with paused_gc():
        t = threading.Thread(target=other_run)
        t.start()
        assert inner_done.wait(10)
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other run is still under way
    release.set()
    t.join(10)
    assert gc.isenabled()  # the last run out turned it back on


def test_a_failing_run_still_restores(gc_enabled: None) -> None:
    with pytest.raises(RuntimeError), paused_gc():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_young_generations_collected_after_batches_that_embedded(
    make_engine: Any, gc_enabled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng = make_engine()
    eng.agents.create("ada")
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    calls: list[int] = []
    real_collect = gc.collect

    def counted(generation: int = 2) -> int:
        calls.append(generation)
        return real_collect(generation)

    monkeypatch.setattr(gc, "collect", counted)
    note = "Rollout of TCK-4471 is blocked on the printer outage.\n"
    write(root, "memory/a.md", note)
    first = eng.memory.index("ada")
    assert first.chunks_embedded == 1 and calls == [1]  # the embedder ran: one young collection
    write(root, "memory/b.md", note)  # the same text: its vector comes from the cache
    calls.clear()
    second = eng.memory.index("ada")
    assert second.rechunked == 1 and second.chunks_embedded == 0 and calls == []
