"""The SQLite backend's saved search index (``<database>.index/``) where it cannot be written:
one warning, then no save attempt for RETRY_SAVE seconds (each would re-write the whole index
and warn again), search answering from memory throughout; the same back-off as ``inprocess``
(tests/plugins/memory/test_postgres_auto_backend.py), shared through the backend class both use."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from goclaw.engine import Engine
from tests.memory_helpers import write


def test_an_unwritable_index_folder_costs_one_warning_and_one_write(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from goclaw_memory import sqlite_backend
    from goclaw_search.index import SearchIndex

    monkeypatch.setattr(sqlite_backend, "SAVE_DELTA", 3)  # "a large change": 3 chunks here
    writes: list[Path] = []
    real_save = SearchIndex.save

    def counted(self: SearchIndex, path: Path) -> None:
        writes.append(Path(path))
        real_save(self, path)

    monkeypatch.setattr(SearchIndex, "save", counted)
    eng = Engine.open(workspace)
    try:
        blocked = Path(str(eng.db.engine.url.database) + ".index")
        blocked.write_text("a file where the index folder goes", encoding="utf-8")
        eng.agents.create("ada")
        root = Path(eng.agent_dir(eng.agents.get("ada")))
        with caplog.at_level(logging.WARNING):
            for round_ in range(4):  # four large changes, each indexed and searched
                for k in range(4):
                    write(root, f"memory/r{round_}n{k}.md", f"Kiln note: ticket TCK-{round_}{k}0 fires.\n")
                eng.memory.index("ada")
                hits = eng.memory.search(f"TCK-{round_}20", "ada")
                assert hits[0].path == f"memory/r{round_}n2.md"
        warnings = [r for r in caplog.records if "could not save the memory index" in r.getMessage()]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]
        assert len(writes) == 1  # tried once, not after every large change
        # Writable again and RETRY_SAVE over: the next large change is saved.
        blocked.unlink()
        eng.memory.backend._no_save_until = 0.0
        for k in range(4):
            write(root, f"memory/late{k}.md", f"Late note {k}: the kiln cools at {k}.\n")
        eng.memory.index("ada")
        assert len(writes) == 2
        assert any(blocked.glob("*.idx/meta.json"))
    finally:
        eng.close()


def test_a_reader_that_rebuilds_a_large_index_saves_it_for_the_next_process(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A saved index the search cannot use (an older format, damaged, deleted) is rebuilt from
    the table by the first search; a large rebuild is saved then, so the next process loads it
    instead of rebuilding it again (at 100k chunks every first search took 36 s until an index
    run happened to save)."""
    import shutil

    from goclaw_memory import sqlite_backend

    monkeypatch.setattr(sqlite_backend, "SAVE_DELTA", 3)
    eng = Engine.open(workspace)
    try:
        eng.agents.create("ada")
        root = Path(eng.agent_dir(eng.agents.get("ada")))
        for k in range(5):
            write(root, f"memory/n{k}.md", f"Kiln note {k}: ticket TCK-{k}00 fires.\n")
        eng.memory.index("ada")
        folder = Path(str(eng.db.engine.url.database) + ".index")
        assert any(folder.glob("*.idx/meta.json"))
    finally:
        eng.close()
    shutil.rmtree(folder)  # as an index of another format would be set aside
    reader = Engine.open(workspace)
    try:
        assert reader.memory.search("TCK-300", "ada")[0].path == "memory/n3.md"
        assert reader.memory.backend.loads == 1  # rebuilt from the table
        assert any(folder.glob("*.idx/meta.json"))  # ... and saved
    finally:
        reader.close()
    later = Engine.open(workspace)
    try:
        assert later.memory.search("TCK-100", "ada")[0].path == "memory/n1.md"
        assert later.memory.backend.loads == 0  # loaded, not rebuilt
    finally:
        later.close()
