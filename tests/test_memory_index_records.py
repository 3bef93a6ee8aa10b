"""What an index run hands the search backend matches the rows it wrote (issue 11, indexing speed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import text

from tests.memory_helpers import write


def _long_line() -> str:
    # One line of ~2,700 characters: the chunker cuts it into three chunks on line 1.
    return " ".join(f"marker{i} " + " ".join([f"lorem{i}"] * 110) for i in range(3))


def test_chunks_of_one_long_line_keep_their_own_terms(make_engine: Any) -> None:
    """Three chunks start on the same line: each chunk's id must carry its own text and terms
    (they were matched by path and start line only, so all three got the last one's)."""
    eng = make_engine()
    eng.agents.create("ada")
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    write(root, "memory/long.md", _long_line() + "\n")
    seen: list[Any] = []
    backend = eng.memory.backend
    original = backend.apply_changes

    def spy(changes: Any) -> None:
        seen.append(changes)
        original(changes)

    backend.apply_changes = spy
    eng.memory.index("ada")
    agent_id = eng.agents.get("ada").id
    with eng.db.engine.connect() as c:
        rows = c.execute(
            text("SELECT id, text, chunk_hash, lex FROM memory_chunks WHERE agent_id = :a ORDER BY id"),
            {"a": agent_id},
        ).all()
    assert len(rows) == 3
    records = seen[-1].records
    assert sorted(records) == [int(r[0]) for r in rows]
    for cid, body, chash, lex in rows:
        rec = records[int(cid)]
        assert (rec.text, rec.chunk_hash, list(rec.terms)) == (body, chash, lex.split())
    body_of = {int(r[0]): r[1] for r in rows}
    for i in range(3):
        hits = eng.memory.search(f"marker{i}", "ada", channel="lexical")
        assert hits and f"marker{i}" in body_of[hits[0].chunk_id], i
