"""The lazy text of a memory search (SQLite backend: the hits built from the index, their text
read afterwards) is the text of the chunk the search found. On SQLite a changed file's chunks
are deleted and the new ones numbered from the largest id + 1, so the last file's new chunks
take the ids its old ones had: a text read by id alone would return another chunk's text under
the old chunk's path, lines and score. Such a row reads as deleted (its chunk hash is not
the one the index held): the hit is left out and the next takes its place."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.memory_helpers import write


@pytest.fixture
def backend() -> str:
    return "sqlite"


def _stored(eng: Any, agent_id: str) -> dict[int, tuple[str, int, int, str]]:
    with sqlite3.connect(eng.db.engine.url.database) as conn:
        rows = conn.execute(
            "SELECT id, path, start_line, end_line, text FROM memory_chunks WHERE agent_id = ?", (agent_id,)
        ).fetchall()
    return {int(i): (p, int(a), int(b), t) for i, p, a, b, t in rows}


@pytest.mark.parametrize("search", ["sqlite", "inprocess"])
def test_a_chunk_id_reused_before_its_text_is_read_reads_as_deleted(make_engine: Any, search: str) -> None:
    eng = make_engine(plugins={"memory": {"backend": search}})
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    for i in range(6):
        write(root, f"memory/note-{i}.md", f"# Note {i}\n\nThe kestrel harbour ferry leaves from pier {i}.\n")
    eng.memory.index("ada")
    write(root, "memory/zz-last.md", "# Osprey\n\nThe osprey lighthouse opens at dawn by the kestrel pier.\n")
    eng.memory.index("ada")  # its chunk has the largest id
    aid = eng.agents.get("ada").id
    before = eng.memory.search("osprey lighthouse kestrel pier", "ada", limit=3)
    victim = before[0].chunk_id
    assert before[0].path == "memory/zz-last.md"
    backend = eng.memory.backend
    read = backend._texts
    rewritten: list[bool] = []

    def reindexing(agent_id: str, ids: Any) -> Any:  # the file changes and is indexed meanwhile
        if not rewritten:
            rewritten.append(True)
            write(root, "memory/zz-last.md", "# Gulls\n\n\n\nThe harbour gulls were counted on Monday.\n")
            eng.memory.index("ada")
        return read(agent_id, ids)

    backend._texts = reindexing
    hits = eng.memory.search("osprey lighthouse kestrel pier", "ada", limit=3)
    stored = _stored(eng, aid)
    assert "gulls" in stored[victim][3]  # the id now holds the changed file's new chunk
    assert victim not in {h.chunk_id for h in hits}
    assert len(hits) == 3  # the next candidate takes its place
    for h in hits:  # every hit's text is its own chunk's, at its path and lines
        assert (h.path, h.start_line, h.end_line, h.snippet) == stored[h.chunk_id]
