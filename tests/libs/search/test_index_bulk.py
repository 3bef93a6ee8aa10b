"""The search index's bulk-load paths: the same index as doc-by-doc."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from goclaw_search.index import Doc, SearchIndex


def _docs(rng: random.Random, n: int, start: int = 0, words: int = 80) -> list[Doc]:
    vocab = [f"w{i}" for i in range(words)]
    return [
        Doc(start + i, rng.choice(["", "ada"]), rng.choices(vocab, k=rng.randint(0, 25)), None, i)
        for i in range(n)
    ]


def _scores(idx: SearchIndex, q: list[str]) -> dict[int, float]:
    s = idx.bm25(q)
    return {int(idx.ids[slot]): round(float(s[slot]), 5) for slot in idx.slot_of.values()}


def test_bulk_load_equals_doc_by_doc_and_survives_save(tmp_path: Path) -> None:
    rng = random.Random(3)
    docs = _docs(rng, 300)
    bulk, one_by_one = SearchIndex(), SearchIndex()
    bulk.upsert(docs)
    for d in docs:
        one_by_one.upsert([d])
    # new terms are numbered in order of first sight, whatever the batching
    first_seen = list(dict.fromkeys(t for d in docs for t in d.terms))
    assert list(bulk.vocab) == first_seen == list(one_by_one.vocab)
    assert list(bulk.vocab.values()) == list(range(len(first_seen)))
    queries = [["w1"], ["w2", "w3", "w79"], ["w5", "nope"]]
    for q in queries:
        assert _scores(bulk, q) == _scores(one_by_one, q)
    bulk.save(tmp_path / "bulk.idx")  # a first bulk load's single segment becomes the base as is
    one_by_one.save(tmp_path / "one.idx")
    for name in ("indptr.npy", "slots.npy", "tf.npy", "fwd_terms.npy", "fwd_ptr.npy"):
        a, b = np.load(tmp_path / "bulk.idx" / name), np.load(tmp_path / "one.idx" / name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    for q in queries:
        assert _scores(SearchIndex.load(tmp_path / "bulk.idx"), q) == _scores(bulk, q)


def test_a_loaded_index_numbers_new_terms_after_its_own(tmp_path: Path) -> None:
    idx = SearchIndex()
    idx.upsert([Doc(1, "", ["alpha", "beta"]), Doc(2, "", ["beta"])])
    idx.save(tmp_path / "i.idx")
    again = SearchIndex.load(tmp_path / "i.idx")
    again.upsert([Doc(3, "", ["gamma", "alpha", "gamma"])])  # a new term after loading
    assert again.vocab == {"alpha": 0, "beta": 1, "gamma": 2}
    scores = again.bm25(["gamma"])
    assert scores[again.slot_of[3]] > 0 and scores[again.slot_of[1]] == 0
    assert again.positions([again.slot_of[3]], ["gamma", "delta"]) == [{"gamma": [0, 2]}]
    assert "delta" not in again.vocab  # reading positions of an unknown term adds nothing


def test_bulk_vectors_of_every_form_are_normalised_in_place() -> None:
    rows = [[3.0, 4.0, 0.0], [0.0, 0.0, 0.0], [0.0, 2.0, 0.0]]
    forms: list[object] = [
        np.asarray(rows[0], dtype=np.float32),
        np.asarray(rows[1], dtype=np.float64),  # a zero vector: no vector
        rows[2],  # a plain list
    ]
    idx = SearchIndex(3)
    idx.upsert([Doc(i, "", ["t"], v) for i, v in enumerate(forms)])
    assert idx.has_vec[: idx.n].tolist() == [True, False, True]
    np.testing.assert_allclose(idx.vec[: idx.n], [[0.6, 0.8, 0], [0, 0, 0], [0, 1, 0]], rtol=1e-6)
    # a column vector among flat ones takes the general path: nothing half copied is left
    odd = SearchIndex(3)
    odd.upsert(
        [
            Doc(1, "", ["t"], np.asarray([1.0, 0.0, 0.0], dtype=np.float32)),
            Doc(2, "", ["t"], np.asarray([[0.0], [5.0], [0.0]], dtype=np.float32)),
            Doc(3, "", ["t"], [0.0, 0.0, 0.0]),
        ]
    )
    assert odd.has_vec[: odd.n].tolist() == [True, True, False]
    np.testing.assert_allclose(odd.vec[: odd.n], [[1, 0, 0], [0, 1, 0], [0, 0, 0]], rtol=1e-6)


def test_reading_an_unknown_term_never_grows_the_vocabulary() -> None:
    """The bulk load numbers new terms through ``Vocab.__missing__``; outside it, ``vocab[t]``
    for an unknown term is a plain ``KeyError`` (a read must not add a term)."""
    idx = SearchIndex()
    idx.upsert([Doc(1, "", ["alpha", "beta", "alpha"]), Doc(2, "", ["gamma"])])
    assert list(idx.vocab) == ["alpha", "beta", "gamma"]
    with pytest.raises(KeyError):
        idx.vocab["delta"]
    assert "delta" not in idx.vocab and len(idx.vocab) == 3
    idx.upsert([Doc(3, "", ["delta", "alpha"])])
    assert idx.vocab["delta"] == 3
