"""The search library: tokenizer, in-memory BM25 + vector index, fusion."""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from goclaw_search.fusion import fuse
from goclaw_search.index import Doc, SearchIndex
from goclaw_search.tokenize import Tokenizer, query_terms, terms


def test_codes_stay_whole_and_split() -> None:
    got = terms("Ticket TCK-4471 touches src/app.py and ops@example.com")
    assert {"tck-4471", "tck", "4471", "src/app.py", "app", "ops@example.com"} <= set(got)
    assert "touch" in got and "and" not in got  # stemmed; stopword dropped


def test_stemming_accents_and_cjk() -> None:
    assert terms("running runs") == ["run", "run"]
    assert terms("Café NAÏVE") == terms("cafe naive")
    assert terms("東京の天気") == ["東京", "京の", "の天", "天気"]
    assert terms("한국어") == ["한국", "국어"]  # Hangul syllables are not decomposed
    assert Tokenizer(stem=False).terms("running") == ["running"]


def test_query_of_stopwords_only_keeps_them() -> None:
    assert query_terms("to be or not") == ["to", "be", "or", "not"]
    assert query_terms("the the TCK-4471") == ["tck-4471", "tck", "4471"]


def _brute_bm25(docs: dict[int, list[str]], q: list[str]) -> dict[int, float]:
    n = len(docs)
    avgdl = sum(len(d) for d in docs.values()) / n
    out = {}
    for i, d in docs.items():
        tf = Counter(d)
        s = 0.0
        for t in dict.fromkeys(q):
            df = sum(1 for e in docs.values() if t in e)
            if tf[t]:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                s += idf * tf[t] * 2.2 / (tf[t] + 1.2 * (0.25 + 0.75 * len(d) / avgdl))
        out[i] = s
    return out


def _corpus(rng: random.Random, n: int, start: int = 0) -> dict[int, list[str]]:
    vocab = [f"w{i}" for i in range(60)]
    return {start + i: rng.choices(vocab, k=rng.randint(3, 30)) for i in range(n)}


def test_bm25_matches_brute_force_after_edits_and_compaction(tmp_path: Path) -> None:
    rng = random.Random(7)
    docs = _corpus(rng, 400)
    idx = SearchIndex()
    idx.upsert(Doc(i, "", d) for i, d in docs.items())
    # edits: replace some, remove many (forces compaction past 30 % dead), add new ones
    for i in rng.sample(sorted(docs), 60):
        docs[i] = rng.choices([f"w{k}" for k in range(60)], k=rng.randint(3, 30))
        idx.upsert([Doc(i, "", docs[i])])
    for i in rng.sample(sorted(docs), 250):
        del docs[i]
        idx.remove([i])
    extra = _corpus(rng, 50, start=10_000)
    docs.update(extra)
    idx.upsert(Doc(i, "", d) for i, d in extra.items())
    for q in (["w1"], ["w2", "w3", "w59"], ["w5", "nope"]):
        want = _brute_bm25(docs, q)
        scores = idx.bm25(q)
        got = {int(idx.ids[s]): float(scores[s]) for s in idx.slot_of.values()}
        assert got.keys() == want.keys()
        for i in want:
            assert got[i] == pytest.approx(want[i], rel=1e-5, abs=1e-6)
    # persisted and loaded: the same scores
    idx.save(tmp_path / "i.npz")
    again = SearchIndex.load(tmp_path / "i.npz")
    s1, s2 = idx.bm25(["w2", "w7"]), again.bm25(["w2", "w7"])
    assert {int(idx.ids[s]): round(float(s1[s]), 5) for s in idx.slot_of.values()} == {
        int(again.ids[s]): round(float(s2[s]), 5) for s in again.slot_of.values()
    }


def test_vectors_and_scopes(tmp_path: Path) -> None:
    idx = SearchIndex(3)
    idx.upsert(
        [
            Doc(1, "", ["a"], [1, 0, 0]),
            Doc(2, "bob", ["a"], [0, 1, 0]),
            Doc(3, "ada", ["b"], [0.9, 0.1, 0]),
        ]
    )
    cos = idx.cosine([1, 0, 0])
    assert cos is not None
    mask = idx.scope_mask(["", "ada"])
    assert mask is not None and mask.tolist() == [True, False, True]
    hits = fuse(idx.bm25(["a"]), cos, mask, limit=5)
    assert [int(idx.ids[h.slot]) for h in hits] == [1, 3]  # bob's chunk never comes back
    assert idx.scope_mask(["carol"]).tolist() == [False, False, False]  # type: ignore[union-attr]
    idx.save(tmp_path / "v.npz")
    again = SearchIndex.load(tmp_path / "v.npz")
    np.testing.assert_allclose(again.cosine([1, 0, 0]), cos)  # type: ignore[arg-type]


def test_weighted_fusion_is_exact_and_single_channel_rule() -> None:
    rng = np.random.default_rng(3)
    lex = rng.random(500).astype(np.float32) * (rng.random(500) > 0.7)
    vec = rng.random(500).astype(np.float32)
    hits = fuse(lex, vec, None, limit=10)
    fused = 0.7 * lex / lex.max() + 0.3 * vec  # the default weights (FusionSettings)
    assert [h.slot for h in hits] == list(np.argsort(-fused, kind="stable")[:10])
    assert hits[0].lexical is not None and hits[0].vector is not None
    alone = fuse(lex, None, None, limit=3)  # one channel: weight 1.0, max-normalised
    assert alone[0].score == pytest.approx(1.0)
    boost = np.ones(500, dtype=np.float32)
    boost[int(np.argsort(-fused)[5])] = 10.0
    assert fuse(lex, vec, None, limit=1, boost=boost)[0].slot == int(np.argsort(-fused)[5])


def test_rank_and_distribution_fusion() -> None:
    lex = np.array([5.0, 4.0, 0.0, 0.0], dtype=np.float32)
    vec = np.array([0.1, 0.2, 0.9, 0.0], dtype=np.float32)
    rrf = fuse(lex, vec, None, limit=4, method="rrf", text_weight=1, vector_weight=1)
    assert {h.slot for h in rrf[:2]} == {0, 1}  # ranked in both lists beats first in one
    for method in ("minmax", "zscore"):
        got = fuse(lex, vec, None, limit=4, method=method)
        assert {h.slot for h in got} == {0, 1, 2} and all(h.score > 0 for h in got)
    with pytest.raises(ValueError, match="unknown fusion"):
        fuse(lex, vec, None, limit=1, method="magic")


def test_top_slots_ties_at_the_cut_resolve_by_slot() -> None:
    """A tie across the k-th place keeps the lowest slots (argpartition alone picks any of
    them: skill search's "ties by slug" and rank_bm25's stable order disagreed)."""
    from goclaw_search.fusion import top_slots

    rng = np.random.default_rng(3)
    for _ in range(50):
        scores = rng.integers(0, 4, size=200).astype(np.float32)
        expected = sorted((i for i in range(200) if scores[i] > 0), key=lambda i: (-scores[i], i))[:5]
        assert top_slots(scores, None, 5).tolist() == expected
        assert [s.slot for s in fuse(scores, None, None, limit=5)] == expected


def test_overlapping_one_thread_limits_restore_blas_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two searches in different threads overlapping on a busy machine (each limits BLAS to one
    thread for its product): once both are done BLAS has its threads back. With a limit per
    search, the second saved "one thread" as the original and restored it last, so BLAS kept
    one thread for the process's life, idle machine or not."""
    from threadpoolctl import threadpool_info

    from goclaw_search import index

    def blas() -> list[int]:
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    original = blas()
    if not original or max(original) < 2:
        pytest.skip("BLAS runs one thread here: nothing to restore")
    monkeypatch.setattr(index, "_machine_idle", lambda: False)
    first, second = index._blas_threads(), index._blas_threads()
    first.__enter__()
    second.__enter__()
    assert max(blas()) == 1
    first.__exit__(None, None, None)  # the first search ends while the second still runs
    assert max(blas()) == 1  # ... and keeps its one thread
    second.__exit__(None, None, None)
    assert blas() == original


def test_scope_mask_with_a_repeated_scope_keeps_other_scopes_out() -> None:
    """Scopes asked for twice (``("", "")``) count once: with as many codes as the index has
    scopes the mask took them for "every scope" and let another user's private chunks in."""
    idx = SearchIndex(0)
    idx.upsert([Doc(1, "", ["kestrel"], None, 1), Doc(2, "alice", ["kestrel"], None, 2)])
    mask = idx.scope_mask(("", ""))
    assert mask is not None and mask.tolist() == [True, False]
    assert idx.scope_mask(("alice", "", "alice")).tolist() == [True, True]  # type: ignore[union-attr]
