"""An index saved before format 6 gets its chunk locations from the table when a process loads
it (SQLite backend). Saving the filled index at once, before bringing it up to date, would let
a forget that deleted the saved file while the locations were read find it written back, with
the chunks it had just erased. So the index is saved once current (reconciled with the
table), under its state's lock, so a forget's flag is honoured too."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from goclaw_search.index import SearchIndex
from tests.libs.search.test_index_locations import _as_format_5
from tests.memory_helpers import write


@pytest.fixture
def backend() -> str:
    return "sqlite"


def test_an_older_index_filled_while_a_forget_discards_it_is_not_written_back_stale(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng = make_engine()
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    for i in range(6):
        write(root, f"memory/n{i}.md", f"# Note {i}\n\nThe kestrel pier {i} opens at {i} am.\n")
    write(root, "memory/secret.md", "# Secret\n\nThe zebulon vault code is kept here.\n")
    eng.memory.index("ada")
    aid = eng.agents.get("ada").id
    backend = eng.memory.backend
    assert eng.memory.search("zebulon vault", "ada")
    saved = backend._snapshot(aid)
    assert saved is not None and backend.save(aid) == saved
    with sqlite3.connect(eng.db.engine.url.database) as conn:
        rows = conn.execute("SELECT id FROM memory_chunks WHERE path = 'memory/secret.md'").fetchall()
    secret = {int(r[0]) for r in rows}
    assert secret and secret <= set(backend._states[aid].index.slot_of)
    _as_format_5(saved)  # saved by an older goclaw: no locations
    (root / "memory/secret.md").unlink()
    eng.memory.index("ada")  # the chunks go from the table; a small change: the file stays
    assert saved.exists()
    backend._states.pop(aid)  # a forget's invalidate: the loaded index dropped first ...
    real = backend._locations

    def discarding(agent_id: str) -> Any:  # ... its saved file deleted while a search loads it
        shutil.rmtree(saved)
        return real(agent_id)

    monkeypatch.setattr(backend, "_locations", discarding)
    hits = eng.memory.search("kestrel pier", "ada")
    assert hits and not {h.chunk_id for h in hits} & secret
    if saved.exists():  # written back only up to date: without the erased chunks
        again = SearchIndex.load(saved)
        assert not set(again.slot_of) & secret
        assert again.located
