"""The search hot path's shortcuts return exactly what the plain computations return: the sampled top-k
cut, BM25 contributions remembered across queries, the scope filter that skips masking, and the
memory search that reads only the rows it can show."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goclaw_search.fusion import SAMPLE_FROM, fuse, fuse_lists, top_slots
from goclaw_search.index import Doc, SearchIndex
from tests.memory_helpers import EmbedderPlugin, write


def _plain_top(scores: np.ndarray, k: int) -> list[int]:
    return sorted((i for i in range(len(scores)) if scores[i] > 0), key=lambda i: (-scores[i], i))[:k]


def test_sampled_top_k_cut_equals_the_plain_sort_with_ties() -> None:
    """Above SAMPLE_FROM slots the cut is guessed from a sample: ties across the k-th place,
    a sample that guesses too high (few large scores) and all-zero tails still give the plain
    order (ties by slot)."""
    rng = np.random.default_rng(11)
    n = SAMPLE_FROM + 5_000
    cases = [
        rng.random(n).astype(np.float32),
        rng.integers(0, 5, size=n).astype(np.float32),  # ties everywhere
        np.where(rng.random(n) < 0.001, rng.random(n), 0).astype(np.float32),  # a few positives
        np.zeros(n, dtype=np.float32),
    ]
    spiky = np.full(n, 0.5, dtype=np.float32)
    spiky[rng.choice(n, 30, replace=False)] = 0.9  # fewer large scores than k, rest tied
    cases.append(spiky)
    for scores in cases:
        for k in (1, 10, 60, 200):
            assert top_slots(scores, None, k).tolist() == _plain_top(scores, k)
    mask = rng.random(n) < 0.5
    masked = np.where(mask, cases[1], 0).astype(np.float32)
    assert top_slots(cases[1], mask, 60).tolist() == _plain_top(masked, 60)


def test_fuse_lists_equals_fuse_for_every_method() -> None:
    rng = np.random.default_rng(4)
    lex = (rng.random(3000) * (rng.random(3000) > 0.8)).astype(np.float32)
    vec = (rng.random(3000) * 2 - 0.5).astype(np.float32)
    mask = rng.random(3000) < 0.9
    boost = np.where(rng.random(3000) < 0.1, 1.2, 1.0).astype(np.float32)
    for method in ("weighted", "rrf", "minmax", "zscore"):
        for lexical, vector in ((lex, vec), (lex, None), (None, vec)):
            kw: dict[str, Any] = {"limit": 30, "method": method, "boost": boost}
            plain = fuse(lexical, vector, mask, **kw)
            got = fuse_lists(lexical, vector, mask, **kw)
            assert got.slots == [s.slot for s in plain]
            assert got.scores == [s.score for s in plain]
            assert got.lexical == (None if lexical is None else [s.lexical for s in plain])
            assert got.vector == (None if vector is None else [s.vector for s in plain])


def _docs(rng: np.random.Generator, ids: range) -> list[Doc]:
    vocab = [f"w{i}" for i in range(40)]
    return [Doc(i, "", [vocab[j] for j in rng.integers(0, 40, size=int(rng.integers(1, 30)))]) for i in ids]


def test_bm25_after_writes_equals_a_fresh_index() -> None:
    """BM25 contributions are remembered per term between queries; every write (add, replace,
    remove, compaction) must make the next query recompute them (N, df and lengths changed)."""
    rng = np.random.default_rng(2)
    idx = SearchIndex(0)
    live = {d.id: d for d in _docs(rng, range(1, 300))}
    idx.upsert(live.values())
    query = ["w1", "w2", "w3", "w39"]

    def check() -> None:
        idx.bm25(query)  # fills the remembered contributions
        fresh = SearchIndex(0)
        fresh.upsert(live.values())
        want = fresh.bm25(query)
        got = idx.bm25(query)
        by_id = {int(idx.ids[s]): float(got[s]) for s in range(idx.n) if idx.alive[s]}
        assert by_id == {int(fresh.ids[s]): float(want[s]) for s in range(fresh.n)}

    check()
    extra = _docs(rng, range(300, 340))
    idx.upsert(extra)
    live.update({d.id: d for d in extra})
    check()
    again = _docs(rng, range(1, 40))  # replaced: the old slots die
    idx.upsert(again)
    live.update({d.id: d for d in again})
    check()
    idx.remove(range(100, 120))
    for i in range(100, 120):
        del live[i]
    check()
    idx.compact()
    check()


def test_scope_filter_is_none_only_when_nothing_is_left_out() -> None:
    idx = SearchIndex(0)
    idx.upsert([Doc(1, "", ["a"]), Doc(2, "", ["b"])])
    assert idx.scope_filter(("",)) is None
    assert idx.scope_filter(None) is None
    assert idx.scope_filter(("", "bob")) is None  # bob has nothing here
    idx.upsert([Doc(3, "bob", ["c"])])
    assert idx.scope_filter(("",)).tolist() == [True, True, False]  # type: ignore[union-attr]
    assert idx.scope_filter(("", "bob")) is None
    idx.remove([1])
    assert idx.scope_filter(("", "bob")).tolist() == [False, True, True]  # type: ignore[union-attr]


@pytest.fixture
def eng(make_engine: Any, in_memory_search: str) -> Any:
    """The in-memory engine's search (``inprocess`` on PostgreSQL)."""
    e = make_engine(extra_plugins=[("testemb", EmbedderPlugin())])
    assert e.memory.backend.name == in_memory_search
    e.agents.create("ada")
    return e


def test_search_without_reranker_fetches_more_rows_when_pieces_of_one_line_collapse(eng: Any) -> None:
    """Without a reranker the backend reads only the rows of the first ``limit`` results; the
    pieces of one over-long line share a start line and collapse into one hit, so the search
    must read further to still return ``limit`` hits, the same as reading every row."""
    from goclaw_memory.hybrid import build_hits

    root = Path(eng.agent_dir(eng.agents.get("ada")))
    line = " ".join(["kestrel harbour ferry timetable kestrel"] * 120)  # ~5 pieces of 1000 chars
    write(root, "memory/long.md", line + "\n")
    for i in range(6):
        write(root, f"memory/n{i}.md", f"# Note {i}\n\nThe harbour office closes at {i + 4} pm.\n")
    eng.memory.index("ada")
    eng.plugin_settings("memory").rerank = "none"
    query = "kestrel harbour ferry timetable"
    got = eng.memory.search(query, "ada", limit=3)
    # The reference: every candidate's row read, then de-duplicated.
    from goclaw.contracts.search import FusionSettings, SearchQuery
    from goclaw_search.tokenize import query_terms

    backend = eng.memory.backend
    emb = eng.embedder()
    agent_id = eng.agents.get("ada").id
    cfg = eng.plugin_settings("memory")
    result = backend.search(
        SearchQuery(
            agent_id=agent_id,
            users=("",),
            text=query,
            terms=tuple(query_terms(query)),
            vector=emb.embed([query])[0],
            space=(emb.provider, emb.model, int(emb.dim)),
            limit=3,
            fusion=FusionSettings(cfg.fusion, cfg.text_weight, cfg.vector_weight, cfg.user_boost),
            rerank_terms=False,
        )
    )
    assert [c.id for c in result.chunks[:2]] and result.rows is not None
    pieces = {c.id for c in result.chunks[:3]}
    assert all(r.path == "memory/long.md" for i, r in backend.rows(agent_id, list(pieces)).items()), (
        "the test needs the long line's pieces ranked first"
    )
    # Only what can be shown was read, or (rows from the index) no text at all yet.
    from goclaw_memory.search_rows import LazyRow

    unread = [r for r in result.rows.values() if type(r) is LazyRow and r.__dict__["_text"] is None]
    assert len(result.rows) < len(result.chunks) or len(unread) == len(result.rows) == len(result.chunks)
    every = build_hits(result.chunks, backend.rows(agent_id, [c.id for c in result.chunks]), 9)[:3]
    assert len(got) == 3
    assert [(h.chunk_id, h.path, h.start_line, h.score) for h in got] == [
        (h.chunk_id, h.path, h.start_line, h.score) for h in every
    ]
    assert got[0].path == "memory/long.md" and {h.path for h in got[1:]} != {"memory/long.md"}


def test_rows_and_chunks_made_without_init_equal_the_dataclasses() -> None:
    """The SQLite backend fills the frozen contract dataclasses' ``__dict__`` directly; they
    must be the same values (equal, same hash, still frozen), and a class that runs code on
    creation must be made through its ``__init__``."""
    import dataclasses

    from goclaw.contracts.search import ChunkRow, ScoredChunk
    from goclaw_memory.search_rows import _FAST_ROW, _FAST_SCORED, _plain, make_row, make_scored

    assert _FAST_ROW and _FAST_SCORED
    row = make_row(7, "ada", "users/ada/MEMORY.md", 3, 9, "text", {"kestrel": [1]})
    plain = ChunkRow(7, "ada", "users/ada/MEMORY.md", 3, 9, "text", {"kestrel": [1]})
    assert row == plain and repr(row) == repr(plain)
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.path = "x"  # type: ignore[misc]
    assert dataclasses.replace(row, terms=None) == dataclasses.replace(plain, terms=None)
    chunk = make_scored(7, 0.5, None, 0.25)
    assert chunk == ScoredChunk(7, 0.5, None, 0.25) and hash(chunk) == hash(ScoredChunk(7, 0.5, None, 0.25))

    @dataclasses.dataclass(frozen=True)
    class Checked:
        id: int

        def __post_init__(self) -> None:
            raise ValueError

    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        id: int

    assert not _plain(Checked, ("id",)) and not _plain(Slotted, ("id",))
    assert not _plain(ScoredChunk, ("id", "score", "lexical"))  # a field added: the real __init__


@pytest.mark.parametrize("chosen", ["default", "postgresql"])
def test_searches_in_threads_while_the_index_changes(
    eng: Any, make_engine: Any, backend: str, chosen: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Searches in several threads (reranker on and off: the shared BM25 contributions, the
    partial row reads, on PostgreSQL the token read with the rows, or, with the ``postgresql``
    backend, the list cache and its ordinals' chunk ids across compactions) while this thread
    re-indexes: no error, every hit's text is its chunk's, and the last write is found
    afterwards."""
    import threading

    if chosen == "postgresql":
        if backend == "sqlite":
            pytest.skip("the postgresql search backend needs PostgreSQL")
        import goclaw_memory.pg_postings as pg_postings_module

        monkeypatch.setattr(pg_postings_module, "COMPACT_ROWS", 1)  # every write compacts
        eng = make_engine(
            extra_plugins=[("testemb", EmbedderPlugin())], plugins={"memory": {"backend": "postgresql"}}
        )
        assert eng.memory.backend.name == "postgresql"
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    for i in range(30):
        write(root, f"memory/n{i}.md", f"# Note {i}\n\nThe harbour crane {i} lifts crates of tea.\n")
    eng.memory.index("ada")
    cfg = eng.plugin_settings("memory")
    errors: list[BaseException] = []
    seen: list[Any] = []
    stop = threading.Event()

    def searcher(k: int) -> None:
        try:
            while not stop.is_set():
                seen.extend(eng.memory.search(f"harbour crane {k} tea", "ada", limit=5))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=searcher, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    try:
        for round_ in range(4):
            cfg.rerank = "none" if round_ % 2 else "overlap"
            write(root, "memory/n0.md", f"# Note 0\n\nThe harbour crane zero moved, round {round_}.\n")
            eng.memory.index("ada")
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors
    assert seen
    # (a rewritten note's chunk may get its old id back: the texts are checked by path)
    versions = {
        f"memory/n{i}.md": {f"# Note {i}\n\nThe harbour crane {i} lifts crates of tea."} for i in range(30)
    }
    versions["memory/n0.md"] |= {f"# Note 0\n\nThe harbour crane zero moved, round {r}." for r in range(4)}
    assert all(h.snippet in versions[h.path] for h in seen), {(h.path, h.snippet) for h in seen} - {
        (p, t) for p, ts in versions.items() for t in ts
    }
    last = eng.memory.search("harbour crane zero moved round 3", "ada", limit=3)
    assert last[0].path == "memory/n0.md" and "round 3" in last[0].snippet
