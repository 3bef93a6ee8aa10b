"""A vector with a NaN or an infinity is no vector: the index keeps a zero row for it (cosine
exactly 0, ``has_vec`` False) on every write path, so every scan path of SearchIndex.fuse gives
the dense exact fusion's result. Before, such a row stayed NaN (an infinity: NaN and has_vec
True): the dense fusion saw a NaN cosine in scope and dropped the whole vector channel, while
the int8 scan ranked the other rows by their cosines and the BLAS bounds path gave a third
result; in the first write, it made the int8 copies' centre NaN, and the vector channel
returned nothing on any path for the index's life."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from goclaw.retrieval import vecq
from goclaw.retrieval.fusion import Fused
from goclaw.retrieval.index import DENSE_BELOW, Doc, SearchIndex

D = 16


def _vectors(rng: np.random.Generator, n: int) -> list[Any]:
    vecs: list[Any] = [rng.standard_normal(D).astype(np.float32) for _ in range(n)]
    vecs[7][3] = np.nan
    vecs[n // 2][0] = np.inf
    vecs[n - 3][5] = -np.inf
    return vecs


def _fused(idx: SearchIndex, unit: Any, lexical: Any, scan: str, one_pass: bool = True) -> Fused:
    vecq.FUSE_IN_SCAN = one_pass
    try:
        return idx.fuse(lexical, unit, None, limit=10, scan=scan)
    finally:
        vecq.FUSE_IN_SCAN = True


@pytest.mark.parametrize("write", ["bulk", "later", "mixed", "set_vectors"])
def test_nonfinite_vectors_are_zero_rows_and_every_scan_agrees(write: str) -> None:
    rng = np.random.default_rng(11)
    n = DENSE_BELOW + 300  # the default path is the int8 scan
    vecs = _vectors(rng, n)
    idx = SearchIndex(D)
    if write == "bulk":  # every new slot has a vector: copied into place, normalised there
        idx.upsert([Doc(i + 1, "", ["w", f"t{i % 7}"], v) for i, v in enumerate(vecs)])
    elif write == "later":  # after the int8 copies' centre was set (it was NaN when set with them)
        docs = [Doc(i + 1, "", ["w", f"t{i % 7}"], v) for i, v in enumerate(vecs)]
        good = [d for d in docs if np.isfinite(d.vector).all()]
        idx.upsert(good)
        idx.upsert([d for d in docs if not np.isfinite(d.vector).all()])
    elif write == "mixed":  # some without one: the general path
        idx.upsert([Doc(i + 1, "", ["w", f"t{i % 7}"], v if i % 5 else None) for i, v in enumerate(vecs)])
        idx.set_vectors([(i + 1, v) for i, v in enumerate(vecs) if not i % 5])
    else:  # one at a time
        idx.upsert([Doc(i + 1, "", ["w", f"t{i % 7}"], None) for i in range(n)])
        idx.set_vectors([(i + 1, v) for i, v in enumerate(vecs)])
    bad = [i for i, v in enumerate(vecs) if not np.isfinite(v).all()]
    slots = [idx.slot_of[i + 1] for i in bad]
    assert not idx.has_vec[slots].any()
    assert np.isfinite(idx.vec[: idx.n]).all()
    assert not idx.vec[slots].any()
    for _ in range(20):
        unit = idx.unit_query(rng.standard_normal(D))
        for lexical in (None, idx.bm25([f"t{int(rng.integers(0, 7))}"])):
            dense = _fused(idx, unit, lexical, "dense")
            assert dense.slots  # the vector channel counts: a NaN row no longer drops it
            for scan, one_pass in (("int8", True), ("int8", False), ("blas", False)):
                got = _fused(idx, unit, lexical, scan, one_pass)
                assert (got.slots, got.scores, got.lexical, got.vector) == (
                    dense.slots,
                    dense.scores,
                    dense.lexical,
                    dense.vector,
                ), scan
