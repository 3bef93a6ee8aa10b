"""What an index run hands the search backend matches the rows it wrote."""

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


def test_vectors_from_the_cache_reach_the_backend_as_arrays(make_engine: Any) -> None:
    """Switching back to a model whose vectors are in the embedding cache re-embeds from the
    cache; the records handed to the search backend (which patches its loaded index) carry
    float32 arrays, never the cache's raw bytes."""
    import numpy as np

    from tests.memory_helpers import EmbedderPlugin

    plugin = EmbedderPlugin()
    eng = make_engine(extra_plugins=[("testemb", plugin)])
    eng.agents.create("ada")
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    write(root, "memory/pets.md", "The cat sleeps on the warm windowsill.\n")
    write(root, "memory/tea.md", "Ada prefers green tea in the afternoon.\n")
    eng.memory.index("ada")
    other = make_engine(extra_plugins=[("testemb", plugin)], plugins={"embeddings": {"provider": "hash"}})
    assert other.memory.index("ada").reembedded == 2
    assert eng.memory.search("cat windowsill", "ada")  # this engine's index catches up first
    seen: list[Any] = []
    backend = eng.memory.backend
    original = backend.apply_changes

    def spy(changes: Any) -> None:
        seen.append(changes)
        original(changes)

    backend.apply_changes = spy
    back = eng.memory.index("ada")
    assert back.reembedded == 2 and back.chunks_embedded == 0  # from the cache
    vectors = [rec.vector for rec in seen[-1].records.values()]
    assert len(vectors) == 2
    assert all(isinstance(v, np.ndarray) and v.dtype == np.float32 and v.shape == (256,) for v in vectors)
    hits = eng.memory.search("where does the cat sleep", "ada", channel="vector")
    assert hits and hits[0].path == "memory/pets.md"


def test_chunks_vectors_from_the_cache_are_written_as_cached(make_engine: Any) -> None:
    """A second agent with the same text gets its vectors from the cache (rows of one array,
    bound to SQL without a copy): each chunk row holds the cache's bytes for its hash."""
    eng = make_engine()
    for name in ("ada", "bob"):
        eng.agents.create(name)
        root = Path(eng.agent_dir(eng.agents.get(name)))
        for i in range(30):
            write(root, f"memory/n{i}.md", f"Note {i}: the ferry leaves pier {i} at {i % 12} o'clock.\n")
    assert eng.memory.index("ada").chunks_embedded == 30
    report = eng.memory.index("bob")
    assert report.chunks_embedded == 0 and report.cache_hits == 30
    with eng.db.engine.connect() as c:
        rows = c.execute(
            text(
                "SELECT c.embedding, e.embedding FROM memory_chunks c JOIN agents a ON a.id = c.agent_id "
                "JOIN embedding_cache e ON e.chunk_hash = c.chunk_hash AND e.model = c.embedding_model "
                "WHERE a.name = 'bob'"
            )
        ).all()
    assert len(rows) == 30
    from goclaw_memory.index_writes import as_float32

    assert all(as_float32(a).tolist() == as_float32(b).tolist() and as_float32(a).size for a, b in rows)
    # the cached vectors rank as the fresh ones do (the vector channel's own order)
    ada = eng.memory.search("when does the ferry leave pier 7", "ada", channel="vector")
    hits = eng.memory.search("when does the ferry leave pier 7", "bob", channel="vector")
    assert hits and [(h.path, h.score) for h in hits] == [(h.path, h.score) for h in ada]
