"""The saved memory index (SQLite backend, next to the database) and ``invalidate``: what a
forget erases must never be written back to disk by a save that was already under way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.memory_helpers import write


@pytest.fixture
def eng(make_engine: Any, backend: str) -> Any:
    if backend != "sqlite":
        pytest.skip("the saved index exists next to a SQLite file only")
    e = make_engine()
    agent = e.agents.create("ada")
    write(Path(e.agent_dir(agent)), "MEMORY.md", "The harbour ferry leaves at noon on Sundays.\n")
    e.memory.index("ada")
    assert e.memory.search("harbour ferry", "ada")  # the index is loaded
    return e


def test_a_save_racing_an_invalidate_writes_nothing(eng: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``save`` fetches the loaded index, then writes it; an ``invalidate`` (a forget) that runs
    in between must win: without the guard the forgotten agent's terms went back on disk."""
    backend = eng.memory.backend
    agent_id = eng.agents.get("ada").id
    path = backend._snapshot(agent_id)
    assert path is not None
    real = backend._snapshot
    raced: list[bool] = []

    def snapshot(aid: str) -> Path | None:
        # save() calls this after fetching the state: the forget lands right then (once)
        if not raced:
            raced.append(True)
            backend.invalidate(aid)
        return real(aid)

    monkeypatch.setattr(backend, "_snapshot", snapshot)
    assert backend.save(agent_id) is None
    assert raced and not path.exists()


def test_a_save_after_the_next_load_is_written(eng: Any) -> None:
    """The guard is per loaded index: once a search loads the agent again, it saves again."""
    backend = eng.memory.backend
    agent_id = eng.agents.get("ada").id
    backend.invalidate(agent_id)
    path = backend._snapshot(agent_id)
    assert path is not None and not path.exists()
    assert eng.memory.search("harbour ferry", "ada")
    assert backend.save(agent_id) == path and path.exists()
