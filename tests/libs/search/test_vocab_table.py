"""A saved index's vocabulary table (goclaw_search.vocab_table): terms found by hash and bytes
exactly as the dict would find them, and an index loaded from disk that searches without
building the dict, builds it on its first write, and saves the same table either way."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goclaw_search import vocab_table
from goclaw_search.index import Doc, SearchIndex
from goclaw_search.vocab_table import SavedVocab, term_hash, term_hashes

TERMS = st.lists(
    st.text(st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), min_size=1, max_size=40),
    unique=True,
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(TERMS, st.lists(st.text(max_size=10), max_size=10))
def test_the_table_finds_exactly_what_the_dict_finds(terms: list[str], others: list[str]) -> None:
    raw = "\n".join(terms).encode("utf-8")
    hashes = term_hashes(np.frombuffer(raw, dtype=np.uint8))
    assert [int(h) for h in hashes] == [term_hash(t) for t in terms]  # numpy and Python agree
    table = SavedVocab.of(raw)
    want = {t: i for i, t in enumerate(terms)}
    assert len(table) == len(terms) and table.words() == terms
    for t in [*terms, *others]:
        assert table.get(t) == want.get(t)


def test_equal_hashes_are_told_apart_by_the_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = "\n".join(["alpha", "beta", "gamma"]).encode("utf-8")
    table = SavedVocab.of(raw)
    # Every term given the same hash: the lookup must compare bytes to find each one.
    table.hashes = np.zeros(3, dtype=np.uint64)
    table.order = np.array([2, 0, 1], dtype=np.int64)
    monkeypatch.setattr(vocab_table, "term_hash", lambda term: 0)
    assert [table.get(t) for t in ("alpha", "beta", "gamma", "delta")] == [0, 1, 2, None]


def _docs(rng: random.Random, n: int, start: int = 0) -> list[Doc]:
    words = [f"w{i}" for i in range(200)] + ["naïve", "東京", "c++"]
    return [Doc(start + i, "", rng.choices(words, k=rng.randint(1, 20)), None, i) for i in range(n)]


def _scores(idx: SearchIndex, q: list[str]) -> dict[int, float]:
    s = idx.bm25(q)
    return {int(idx.ids[slot]): round(float(s[slot]), 5) for slot in idx.slot_of.values()}


def test_a_loaded_index_searches_without_the_dict_and_builds_it_on_a_write(tmp_path: Path) -> None:
    rng = random.Random(5)
    idx = SearchIndex()
    idx.upsert(_docs(rng, 300))
    idx.save(tmp_path / "i")
    queries = [["w3", "naïve"], ["東京", "nope"], ["c++"], ["absent"]]
    want = [_scores(idx, q) for q in queries]
    matches = idx.positions(list(idx.slot_of.values())[:20], ["w3", "w7"])

    loaded = SearchIndex.load(tmp_path / "i")
    assert [_scores(loaded, q) for q in queries] == want
    assert loaded.positions(list(loaded.slot_of.values())[:20], ["w3", "w7"]) == matches
    assert loaded._vocab is None  # searched from the saved table

    loaded.save(tmp_path / "again")  # saved as it was loaded: the same table
    for name in ("vocab.txt", "vocab_hash.npy", "vocab_order.npy"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "i" / name).read_bytes()

    more = _docs(rng, 50, start=300)
    more[0] = Doc(300, "", ["brand-new", "w3"], None, 0)
    loaded.upsert(more)
    idx.upsert(more)
    assert loaded.vocab == idx.vocab  # built on the write, the same ids
    assert [_scores(loaded, q) for q in [*queries, ["brand-new"]]] == [
        _scores(idx, q) for q in [*queries, ["brand-new"]]
    ]
    loaded.save(tmp_path / "third")
    third = SearchIndex.load(tmp_path / "third")
    assert _scores(third, ["brand-new", "w3"]) == _scores(idx, ["brand-new", "w3"])
