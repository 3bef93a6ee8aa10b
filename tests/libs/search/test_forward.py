"""The forward index: each slot's term positions, kept through edits, compaction and
a save / load, and what the memory search hands the reranker."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from goclaw.engine import Engine
from goclaw_search.index import Doc, SearchIndex
from goclaw_search.rerank import overlap_scores
from goclaw_search.tokenize import query_terms, terms


def _expected(doc: list[str], wanted: list[str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, t in enumerate(doc):
        if t in wanted:
            out.setdefault(t, []).append(i)
    return out


def _check(idx: SearchIndex, docs: dict[int, list[str]], wanted: list[str]) -> None:
    ids = sorted(docs)
    slots = [idx.slot_of[i] for i in ids]
    got = idx.positions(slots, wanted)
    assert got == [_expected(docs[i], wanted) for i in ids]


def test_positions_survive_edits_compaction_and_reload(tmp_path: Path) -> None:
    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(30)]
    docs = {i: [rng.choice(vocab) for _ in range(rng.randint(0, 40))] for i in range(1, 400)}
    idx = SearchIndex()
    for start in range(1, 400, 50):  # several appended parts
        idx.upsert(Doc(i, "", docs[i]) for i in range(start, min(start + 50, 400)))
    wanted = ["w1", "w7", "w29", "absent"]
    _check(idx, docs, wanted)
    for i in range(1, 400, 3):  # replace a third, drop another third: compaction runs
        docs[i] = [rng.choice(vocab) for _ in range(rng.randint(1, 20))]
    idx.upsert(Doc(i, "", docs[i]) for i in range(1, 400, 3))
    idx.remove(range(2, 400, 3))
    for i in range(2, 400, 3):
        del docs[i]
    _check(idx, docs, wanted)
    idx.compact()
    _check(idx, docs, wanted)
    idx.save(tmp_path / "idx")
    again = SearchIndex.load(tmp_path / "idx")
    _check(again, docs, wanted)
    again.upsert([Doc(1000, "", ["w1", "x", "w7"])])  # append after a load
    docs[1000] = ["w1", "x", "w7"]
    _check(again, docs, wanted)


def test_reranked_search_equals_reranking_the_texts(workspace: Path) -> None:
    """The SQLite backend hands the reranker the query terms' positions from the forward index:
    the final scores must equal the overlap formula applied to each hit's own text."""
    eng = Engine.open(workspace)
    try:
        eng.agents.create("a")
        mem = Path(eng.agent_dir(eng.agents.get("a"))) / "memory"
        mem.mkdir(parents=True, exist_ok=True)
        lines = [
            "Door code for the Vilnius warehouse is 4464#.",
            "Silver Labs moved their warehouse from Vilnius to Accra. Later the door was painted.",
            "The Vilnius office has a red door.",
            "Nothing related at all here.",
        ]
        for n, line in enumerate(lines):
            (mem / f"n{n}.md").write_text(f"# note {n}\n\n{line}\n", encoding="utf-8")
        eng.memory.index("a")
        query = "Vilnius warehouse door"
        settings = eng.plugin_settings("memory")
        settings.rerank_passages = 0  # the overlap reranker alone (the passage step has its own tests)
        settings.rerank = "none"
        plain = {h.path: h.score for h in eng.memory.search(query, "a", limit=10)}
        settings.rerank = "overlap"
        reranked = eng.memory.search(query, "a", limit=10)
        assert reranked and reranked[0].path == "memory/n0.md"
        for hit in reranked:
            want = overlap_scores(
                query_terms(query),
                [terms(hit.snippet), terms("door vilnius warehouse")],
                [plain[hit.path], 1.0],
                settings.rerank_weight,
            )[0]
            assert hit.score == pytest.approx(want, rel=1e-6), hit.path
    finally:
        eng.close()


def test_an_index_saved_by_an_older_format_is_rebuilt_quietly(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Format 1 (before the forward index) on disk: the next process rebuilds from the table,
    finds the same hits, logs no warning, and saves the current format."""
    import json
    import logging

    eng = Engine.open(workspace)
    try:
        eng.agents.create("a")
        mem = Path(eng.agent_dir(eng.agents.get("a"))) / "memory"
        mem.mkdir(parents=True, exist_ok=True)
        (mem / "n.md").write_text("# n\n\nThe Vilnius warehouse door code is 4464#.\n", encoding="utf-8")
        eng.memory.index("a")
        before = [(h.path, h.start_line) for h in eng.memory.search("vilnius door", "a")]
        saved = eng.memory.backend.save(eng.agents.get("a").id)
    finally:
        eng.close()
    assert saved is not None and before
    meta = json.loads((saved / "meta.json").read_text(encoding="utf-8"))
    meta["format"] = 1
    (saved / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    caplog.set_level(logging.INFO)
    eng = Engine.open(workspace)
    try:
        after = [(h.path, h.start_line) for h in eng.memory.search("vilnius door", "a")]
        resaved = eng.memory.backend.save(eng.agents.get("a").id)
    finally:
        eng.close()
    assert after == before
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert resaved is not None
    from goclaw_search.persist import FORMAT

    assert json.loads((resaved / "meta.json").read_text(encoding="utf-8"))["format"] == FORMAT == 8


def test_batched_window_features_equal_the_sliding_window() -> None:
    """``SearchIndex.positions`` computes every candidate's matched-term count and shortest
    window in numpy at once; the reranker's scores from them must equal the per-document
    sliding window over plain position maps, and the mappings must read like those maps."""
    from goclaw_search.rerank import TermMatches, _proximity

    rng = random.Random(11)
    vocab = [f"w{i}" for i in range(12)]
    docs = {i: [rng.choice(vocab) for _ in range(rng.randint(0, 60))] for i in range(1, 300)}
    idx = SearchIndex()
    idx.upsert(Doc(i, "", d) for i, d in docs.items())
    for _ in range(40):
        wanted = rng.sample([*vocab, "absent"], rng.randint(1, 6))
        ids = rng.sample(sorted(docs), 60)
        got = idx.positions([idx.slot_of[i] for i in ids], wanted)
        plain = [_expected(docs[i], wanted) for i in ids]
        assert all(isinstance(g, TermMatches) for g in got)
        assert [dict(g.items()) for g in got] == plain
        for g, p in zip(got, plain, strict=True):
            present = set(p)
            assert g.matched == len(present)
            want = _proximity(p, present) if len(present) > 1 else float(len(present))
            assert g.proximity(frozenset(wanted)) == pytest.approx(want)
            assert g.proximity(frozenset([*wanted, "other"])) is None  # computed for other terms
        scores = [rng.random() for _ in ids]
        assert overlap_scores(wanted, got, scores) == pytest.approx(overlap_scores(wanted, plain, scores))
        # asked with other terms, the mappings are read as mappings
        again = overlap_scores(wanted[:1], plain, scores)
        assert overlap_scores(wanted[:1], got, scores) == pytest.approx(again)
