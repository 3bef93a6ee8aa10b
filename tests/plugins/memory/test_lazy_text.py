"""A memory search on the SQLite backend builds its candidates from the index and reads the
chunks' text only when something reads it (for query speed): the hits returned (one query), or,
for a reranker that reads snippets, every candidate in one query; a chunk deleted in between
gives a clean result. The results are those of reading every row."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from goclaw import hookimpl
from goclaw_memory.hybrid import LazyHit
from tests.memory_helpers import write


@pytest.fixture
def backend() -> str:
    return "sqlite"


def _notes(root: Path, n: int = 30) -> None:
    for i in range(n):
        write(
            root,
            f"memory/note-{i:02d}.md",
            f"# Note {i}\n\nThe kestrel harbour ferry leaves at {i % 12 + 1} pm from pier {i}.\n\n"
            f"## Later\n\nDana moved the billing review {i} to March; the gateway {i} was renewed.\n",
        )


class SnippetReader:
    """A third-party reranker that reads every candidate's snippet and reverses them."""

    def __init__(self) -> None:
        self.snippets: list[list[str]] = []

    @hookimpl(tryfirst=True)
    def goclaw_memory_rerank(self, engine: Any, query: str, agent: Any, user: Any, hits: list[Any]) -> Any:
        self.snippets.append([h.snippet for h in hits])
        return list(reversed(hits))


def _counted(backend: Any) -> list[list[int]]:
    calls: list[list[int]] = []
    read = backend._texts

    def counting(agent_id: str, ids: Any) -> Any:
        calls.append(list(ids))
        return read(agent_id, ids)

    backend._texts = counting
    return calls


def _stored(eng: Any, agent_id: str) -> dict[int, str]:
    with sqlite3.connect(eng.db.engine.url.database) as conn:
        rows = conn.execute("SELECT id, text FROM memory_chunks WHERE agent_id = ?", (agent_id,)).fetchall()
    return {int(i): t for i, t in rows}


@pytest.mark.parametrize("search", ["sqlite", "inprocess"])
def test_returned_hits_carry_their_text_read_in_one_query(make_engine: Any, search: str) -> None:
    eng = make_engine(plugins={"memory": {"backend": search}})
    _notes(Path(eng.agent_dir(eng.agents.create("ada"))))
    eng.memory.index("ada")
    aid = eng.agents.get("ada").id
    eng.memory.search("warm up", "ada")
    assert eng.memory.backend.name == search
    calls = _counted(eng.memory.backend)
    hits = eng.memory.search("kestrel harbour ferry pier", "ada", limit=5)
    assert len(hits) == 5 and all(type(h) is LazyHit for h in hits)
    assert len(calls) == 1 and sorted(calls[0]) == sorted(h.chunk_id for h in hits)  # only those shown
    stored = _stored(eng, aid)
    assert [h.snippet for h in hits] == [stored[h.chunk_id] for h in hits]
    assert all(h.as_json()["snippet"] for h in hits) and len(calls) == 1


@pytest.mark.parametrize("search", ["sqlite", "inprocess"])
def test_a_reranker_reading_snippets_gets_real_text_in_one_query(make_engine: Any, search: str) -> None:
    reader = SnippetReader()
    eng = make_engine(extra_plugins=[("reader", reader)], plugins={"memory": {"backend": search}})
    _notes(Path(eng.agent_dir(eng.agents.create("ada"))))
    eng.memory.index("ada")
    aid = eng.agents.get("ada").id
    eng.memory.search("warm up", "ada")
    reader.snippets.clear()
    calls = _counted(eng.memory.backend)
    hits = eng.memory.search("kestrel harbour ferry pier", "ada", limit=5)
    stored = _stored(eng, aid)
    (seen,) = reader.snippets
    assert len(seen) > 5 and set(seen) <= set(stored.values()) and all(seen)
    assert len(calls) == 1 and len(calls[0]) == len(seen)  # every candidate, one query
    assert [h.snippet for h in hits] == [stored[h.chunk_id] for h in hits] and len(calls) == 1


def test_a_chunk_deleted_before_its_text_is_read_is_left_out(make_engine: Any) -> None:
    eng = make_engine()
    _notes(Path(eng.agent_dir(eng.agents.create("ada"))))
    eng.memory.index("ada")
    aid = eng.agents.get("ada").id
    before = eng.memory.search("kestrel harbour ferry pier", "ada", limit=5)
    victim = before[0].chunk_id
    backend = eng.memory.backend
    read = backend._texts

    def deleting(agent_id: str, ids: Any) -> Any:  # another process deletes it meanwhile
        with sqlite3.connect(eng.db.engine.url.database) as conn:
            conn.execute("DELETE FROM memory_chunks WHERE id = ?", (victim,))
        return read(agent_id, ids)

    backend._texts = deleting
    hits = eng.memory.search("kestrel harbour ferry pier", "ada", limit=5)
    assert victim not in {h.chunk_id for h in hits}
    assert len(hits) == 5  # the next candidate takes its place
    assert [h.chunk_id for h in hits[:4]] == [h.chunk_id for h in before[1:5]]
    stored = _stored(eng, aid)
    assert all(h.snippet == stored[h.chunk_id] for h in hits)


@pytest.mark.parametrize(
    "settings",
    [{}, {"mmr": True, "decay": True}, {"rerank": "none"}, {"backend": "inprocess"}],
)
def test_results_are_those_of_reading_every_row(make_engine: Any, settings: dict[str, Any]) -> None:
    """The lazy path against the eager one (an index without locations reads the rows), on
    a real indexed workspace: same hits, order, text and scores."""
    eng = make_engine(plugins={"memory": settings})
    _notes(Path(eng.agent_dir(eng.agents.create("ada"))), 40)
    write(Path(eng.agent_dir(eng.agents.get("ada"))), "MEMORY.md", "# Memory\n\nKestrel pier 7 is closed.\n")
    eng.memory.index("ada")
    queries = ["kestrel harbour ferry pier", "billing review March", "gateway renewed", "pier 7", "Dana"]

    def run() -> list[Any]:
        out = []
        for q in queries:
            hits = eng.memory.search(q, "ada", limit=6)
            out.append([(h.chunk_id, h.path, h.start_line, h.end_line, h.snippet, h.id) for h in hits])
            out.append([h.score for h in hits])
        return out

    lazy = run()
    st = next(iter(eng.memory.backend._states.values()))
    st.index.located = False  # as an index without locations: every row read by the search
    calls = _counted(eng.memory.backend)
    eager = run()
    assert not calls and all(lazy[0])
    for got, want in zip(lazy, eager, strict=True):  # scores: decay reads the clock (1e-6)
        assert got == pytest.approx(want, abs=1e-6) if isinstance(got[0], float) else got == want


def test_the_version_token_is_read_again_only_after_another_connection_commits(make_engine: Any) -> None:
    eng = make_engine()
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    _notes(root, 5)
    eng.memory.index("ada")
    eng.memory.search("kestrel", "ada")
    backend = eng.memory.backend
    reads: list[str] = []
    read = backend._read_token

    def counting(agent_id: str) -> str:
        reads.append(agent_id)
        return read(agent_id)

    backend._read_token = counting
    for _ in range(3):
        eng.memory.search("kestrel", "ada")
    assert reads == []  # nothing committed since: the token it holds is current
    write(root, "memory/new.md", "# New\n\nThe osprey lighthouse opens on Sunday.\n")
    eng.memory.index("ada")  # commits through the engine's own connections
    hits = eng.memory.search("osprey lighthouse", "ada")
    assert len(reads) == 1 and hits and hits[0].path == "memory/new.md"
    with sqlite3.connect(eng.db.engine.url.database) as conn:  # another process's write
        conn.execute("DELETE FROM memory_chunks WHERE path = 'memory/new.md'")
        conn.execute(
            "UPDATE worker_state SET value = ? WHERE scope = ?",
            ('{"token": "moved"}', eng.agents.get("ada").id),
        )
    hits = eng.memory.search("osprey lighthouse", "ada")
    assert len(reads) == 2 and "memory/new.md" not in {h.path for h in hits}
