"""``backend = "inprocess"``: the shared search engine kept in step through the search
contract's IndexSource, on SQLite and PostgreSQL (where ``auto`` selects ``postgresql``; this
one stays an option for a single host). It passes the same backend suite as the built-in
backends (every test of goclaw_memory.testing.backend_suite, on both databases), and its
results equal the SQLite backend's exact ones on the same files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from goclaw_memory.testing.backend_suite import *  # noqa: F403 - the suite's tests and fixtures


@pytest.fixture
def search_backend() -> str:
    return "inprocess"


def _indexed(eng: Any, lines: list[str]) -> Any:
    """``eng`` with agent "ada" whose memory holds one note per line, indexed."""
    eng.agents.create("ada")
    mem = Path(eng.agent_dir(eng.agents.get("ada"))) / "memory"
    mem.mkdir(parents=True, exist_ok=True)
    for i, line in enumerate(lines):
        (mem / f"n{i}.md").write_text(f"# n{i}\n\n{line}\n", encoding="utf-8")
    eng.memory.index("ada")
    return eng


def test_same_results_as_the_exact_sqlite_backend(
    make_engine: Any,
    plugin: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The database in use (SQLite or PostgreSQL) with ``inprocess`` against a second, SQLite
    workspace with the default backend: the same hits and scores for every query."""
    from goclaw.engine import Engine

    lines = [
        f"Note {i}: the {w} warehouse in {c} moved its door code."
        for i, (w, c) in enumerate(
            (w, c) for w in ("north", "south", "river", "harbor") for c in ("Vilnius", "Accra", "Porto")
        )
    ]
    eng = _indexed(make_engine(extra_plugins=[("testemb", plugin)]), lines)
    monkeypatch.delenv("GOCLAW_PLUGINS__MEMORY__BACKEND")
    ws = tmp_path / "reference"
    ws.mkdir()
    ref = _indexed(Engine.open(ws, extra_plugins=[("testemb", plugin)]), lines)
    assert ref.memory.backend.name == "sqlite"
    try:
        for q in ("Vilnius door", "river warehouse Porto", "harbor", "code moved"):
            got = [(h.path, round(h.score, 5)) for h in eng.memory.search(q, "ada", limit=6)]
            want = [(h.path, round(h.score, 5)) for h in ref.memory.search(q, "ada", limit=6)]
            assert got and got == want, q
    finally:
        ref.close()


def test_the_first_build_is_saved_in_the_workspace_and_loaded_next_time(
    make_engine: Any,
    plugin: Any,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    eng = _indexed(
        make_engine(extra_plugins=[("testemb", plugin)]),
        [f"fact number {i} about the harbor" for i in range(5)],
    )
    # As if another process: nothing loaded, nothing saved.
    eng.memory.backend.invalidate(eng.agents.get("ada").id)
    first = [(h.path, h.score) for h in eng.memory.search("harbor fact", "ada")]
    saved = eng.memory.backend._snapshot(eng.agents.get("ada").id)
    assert saved is not None and saved.exists()
    if eng.db.backend != "sqlite":
        assert (workspace / ".goclaw" / "memory-index") in saved.parents
    from goclaw_memory.source import ChunkTableSource

    read: list[str] = []
    original = ChunkTableSource.fingerprints

    def counting(self: Any, agent_id: str, space: Any) -> Any:
        read.append(agent_id)
        return original(self, agent_id, space)

    monkeypatch.setattr(ChunkTableSource, "fingerprints", counting)
    again = make_engine(extra_plugins=[("testemb", plugin)])
    assert [(h.path, h.score) for h in again.memory.search("harbor fact", "ada")] == first
    assert again.memory.backend.loads == 0  # loaded from the saved index, nothing re-read
    assert read == []  # saved with the database's token: not even the fingerprints are read


def test_a_catch_up_in_several_batches_builds_the_same_index(
    make_engine: Any,
    plugin: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import goclaw_memory.sqlite_backend as sb

    eng = _indexed(make_engine(extra_plugins=[("testemb", plugin)]), [f"harbor fact {i}" for i in range(7)])
    first = [(h.path, h.score) for h in eng.memory.search("harbor fact 3", "ada")]
    eng.memory.backend.invalidate(eng.agents.get("ada").id)
    monkeypatch.setattr(sb, "UPSERT_BATCH", 2)  # 7 chunks -> 4 batches
    loads = eng.memory.backend.loads
    assert [(h.path, h.score) for h in eng.memory.search("harbor fact 3", "ada")] == first
    assert eng.memory.backend.loads == loads + 1  # rebuilt from the table, not loaded
    assert len(eng.memory.backend._states[eng.agents.get("ada").id].index) == 7


def test_a_large_build_then_searches_the_saved_memory_mapped_copy(
    make_engine: Any,
    plugin: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a large first build is saved, the search runs on the saved copy (memory-mapped:
    the heap the build used goes back to the system), with the same results."""
    import numpy as np

    import goclaw_memory.inprocess_backend as ib

    eng = _indexed(make_engine(extra_plugins=[("testemb", plugin)]), [f"harbor fact {i}" for i in range(7)])
    agent = eng.agents.get("ada").id
    first = [(h.path, h.score) for h in eng.memory.search("harbor fact 3", "ada")]
    eng.memory.backend.invalidate(agent)
    monkeypatch.setattr(ib, "SAVE_DELTA", 5)  # 7 chunks count as a large build
    assert [(h.path, h.score) for h in eng.memory.search("harbor fact 3", "ada")] == first
    index = eng.memory.backend._states[agent].index
    assert isinstance(index.vec.base, np.memmap) and isinstance(index.ids.base, np.memmap)
    eng.memory.index("ada")  # and it keeps taking patches
    (Path(eng.agent_dir(eng.agents.get("ada"))) / "memory" / "n9.md").write_text("# n9\n\nharbor fact 9\n")
    eng.memory.index("ada")
    assert eng.memory.search("harbor fact 9", "ada")[0].path == "memory/n9.md"


def test_a_catch_up_pauses_the_cyclic_garbage_collector(
    make_engine: Any,
    plugin: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Like an index run, a catch-up (a first build: ~100 long-lived objects per chunk) runs with
    the cyclic collector paused (14 % of a 100k build's CPU), and restores it afterwards."""
    import gc

    from goclaw_memory.inprocess_backend import InProcessSearchBackend

    eng = _indexed(make_engine(extra_plugins=[("testemb", plugin)]), [f"harbor fact {i}" for i in range(3)])
    eng.memory.backend.invalidate(eng.agents.get("ada").id)
    seen: list[bool] = []
    original = InProcessSearchBackend._docs

    def spy(self: Any, *args: Any) -> Any:
        seen.append(gc.isenabled())
        return original(self, *args)

    monkeypatch.setattr(InProcessSearchBackend, "_docs", spy)
    assert gc.isenabled()
    assert eng.memory.search("harbor fact 1", "ada")
    assert seen == [False] and gc.isenabled()


def test_a_saved_copy_replaced_by_another_process_is_not_searched(
    make_engine: Any,
    plugin: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Between this process's save and its switch to the saved copy, another process may
    replace the saved index with one of another version (its content older or newer than
    what was built here): the built copy stays, or the search would answer from that content
    while trusting this process's version token (an older copy: chunks missing until the
    next write)."""
    import json

    import numpy as np

    import goclaw_memory.inprocess_backend as ib
    from goclaw_memory.sqlite_backend import SQLiteSearchBackend

    eng = _indexed(make_engine(extra_plugins=[("testemb", plugin)]), [f"harbor fact {i}" for i in range(7)])
    agent = eng.agents.get("ada").id
    eng.memory.backend.invalidate(agent)
    monkeypatch.setattr(ib, "SAVE_DELTA", 5)  # 7 chunks count as a large build
    real_save = SQLiteSearchBackend.save

    def save_then_replaced(self: Any, agent_id: str) -> Any:
        path = real_save(self, agent_id)
        if path is not None:  # another process's save lands right after this one
            meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
            (path / "meta.json").write_text(json.dumps(meta | {"token": "another"}), encoding="utf-8")
        return path

    monkeypatch.setattr(SQLiteSearchBackend, "save", save_then_replaced)
    assert eng.memory.search("harbor fact 3", "ada")[0].path == "memory/n3.md"
    index = eng.memory.backend._states[agent].index
    assert not isinstance(index.vec.base, np.memmap)  # the copy built here
    assert index.meta["token"] != "another"
