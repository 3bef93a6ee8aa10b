"""Search indexes made to stress the vector channel's exactness, shared by the vector kernel and
fusion tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from goclaw_search import vecq
from goclaw_search.fusion import Fused
from goclaw_search.index import Doc, SearchIndex

WORDS = [f"w{i}" for i in range(40)]


def _index(rng: np.random.Generator, n: int, d: int) -> SearchIndex:
    """Clustered vectors (many cosines close together), exact duplicates, near-duplicates a few
    ulps apart, rows without a vector; few words, so BM25 ties too; three scopes."""
    centres = rng.standard_normal((4, d))
    docs = []
    for i in range(n):
        kind = rng.random()
        vec: Any = centres[i % 4] + 0.3 * rng.standard_normal(d)
        if kind < 0.1 and i > 2:
            vec = docs[int(rng.integers(0, i))].vector  # a duplicate (maybe None)
        elif kind < 0.2 and i > 2 and docs[i - 1].vector is not None:
            vec = np.asarray(docs[i - 1].vector) * (1 + 1e-7 * rng.standard_normal(d))  # a near-tie
        elif kind < 0.3:
            vec = None
        terms = [str(w) for w in rng.choice(WORDS[: 10 + i % 30], size=int(rng.integers(1, 8)))]
        docs.append(Doc(i + 1, ("", "u1", "u2")[i % 3], terms, vec))
    idx = SearchIndex(d)
    for at in range(0, n, 97):  # several writes: several segments
        idx.upsert(docs[at : at + 97])
    return idx


def _query(rng: np.random.Generator, idx: SearchIndex) -> Any:
    roll = rng.random()
    if roll < 0.2:
        live = np.flatnonzero(idx.has_vec[: idx.n])
        return idx.vec[int(rng.choice(live))] if len(live) else rng.standard_normal(idx.dim)
    if roll < 0.3:
        return -idx.vec[: idx.n].sum(axis=0)  # most cosines negative
    return rng.standard_normal(idx.dim)


def _same(a: Fused, b: Fused) -> None:
    assert a.slots == b.slots
    assert a.scores == b.scores
    assert a.lexical == b.lexical
    assert a.vector == b.vector


def _two_pass(idx: SearchIndex, *args: Any, **kwargs: Any) -> Fused:
    """SearchIndex.fuse on the int8 path without the one-pass fuse_scan (the scan's bounds, then
    fusion.fuse_bounded)."""
    vecq.FUSE_IN_SCAN = False
    try:
        return idx.fuse(*args, scan="int8", **kwargs)
    finally:
        vecq.FUSE_IN_SCAN = True
