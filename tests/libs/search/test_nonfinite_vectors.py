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

from goclaw_search import vecq
from goclaw_search.fusion import Fused
from goclaw_search.index import DENSE_BELOW, Doc, SearchIndex

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


def _saved_with_a_nan_row(tmp_path: Any, fmt: int) -> Any:
    """An index saved as an older version wrote it: one row NaN with ``has_vec`` True (the
    ``fmt`` 4 form is quantized again on load, its centre computed from that row)."""
    import json

    rng = np.random.default_rng(5)
    idx = SearchIndex(D)
    idx.upsert([Doc(i + 1, "", ["w"], rng.standard_normal(D).astype(np.float32)) for i in range(40)])
    path = tmp_path / "idx"
    idx.save(path)
    vec = np.load(path / "vec.npy")
    vec[3, 0] = np.nan
    np.save(path / "vec.npy", vec)
    q8e = np.load(path / "q8e.npy")
    q8e[3] = np.inf  # what quantizing a NaN row gives its bound
    np.save(path / "q8e.npy", q8e)
    meta = json.loads((path / "meta.json").read_text())
    meta["format"] = fmt
    (path / "meta.json").write_text(json.dumps(meta))
    return path


@pytest.mark.parametrize("fmt", [4, 6])
def test_an_index_saved_with_a_nonfinite_vector_is_refused_on_load(tmp_path: Any, fmt: int) -> None:
    """Refused (ValueError: the memory backends then rebuild it from the table, where an upsert
    now stores such a vector as none) instead of loaded with a NaN centre or bound."""
    path = _saved_with_a_nan_row(tmp_path, fmt)
    with pytest.raises(ValueError, match="not finite"):
        SearchIndex.load(path)
