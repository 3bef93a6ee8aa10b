"""The SQLite backend's saved search index (``<database>.index/``) where it cannot be written:
one warning, then no save attempt for RETRY_SAVE seconds (each would re-write the whole index
and warn again), search answering from memory throughout; the same back-off as ``inprocess``
(tests/test_pg_default_backend.py), shared through the backend class both use."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from goclaw.engine import Engine
from tests.memory_helpers import write


def test_an_unwritable_index_folder_costs_one_warning_and_one_write(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from goclaw.retrieval.index import SearchIndex
    from goclaw_memory import sqlite_backend

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
