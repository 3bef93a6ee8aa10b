"""Scores in a dense array (goclaw_search.dense): the compiled scatter and top-m give the numpy
versions' results, bit for bit, on random, tied and degenerate arrays; bad input raises."""

from __future__ import annotations

import numpy as np
import pytest

from goclaw_search import dense, vecq

needs_c = pytest.mark.skipif(vecq.compiled is None, reason="the compiled kernels are not built (or not used)")


def _reference_top(score: np.ndarray, m: int) -> list[int]:
    """The definition, slowly: positive entries by score descending, then index ascending."""
    ranked = sorted((i for i in range(len(score)) if score[i] > 0), key=lambda i: (-score[i], i))
    return ranked[:m]


def _arrays(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    dense_random = rng.random(n)
    sparse = np.where(rng.random(n) < 0.05, rng.random(n), 0.0)
    ties = np.round(rng.random(n) * 4) / 4  # few distinct values: ties everywhere, zeros too
    signed = rng.standard_normal(n)  # negatives never qualify
    with_nan = dense_random.copy()
    with_nan[:: max(1, n // 7)] = np.nan  # a NaN is not above zero
    return [dense_random, sparse, ties, signed, with_nan, np.zeros(n)]


@pytest.mark.parametrize("path", ["compiled", "numpy"])
@pytest.mark.parametrize("n", [0, 1, 5, 300, 5000])
def test_top_positive_is_the_definition(path: str, n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "compiled" and vecq.compiled is None:
        pytest.skip("the compiled kernels are not built (or not used)")
    if path == "numpy":
        monkeypatch.setattr(dense, "compiled", None)
    rng = np.random.default_rng(n)
    for score in _arrays(rng, n):
        for m in (0, 1, 3, 10, 160, n, n + 5):
            got = dense.top_positive(score, m)
            assert got.dtype == np.int64
            assert got.tolist() == _reference_top(score, m), (m, score[:10])


@needs_c
def test_scatter_add_same_bits_as_numpy() -> None:
    rng = np.random.default_rng(3)
    n = 20_000
    compiled_out = np.zeros(n)
    numpy_out = np.zeros(n)
    for _ in range(6):  # several lists in a row, as a query's terms: the same order of additions
        ords = rng.choice(n, int(rng.integers(1, n)), replace=False).astype(np.int32)
        factor = rng.random(len(ords)) * rng.random()
        w = float(rng.random() * 7)
        vecq.compiled.scatter_add(compiled_out, ords, factor, w)
        numpy_out[ords] += w * factor
    assert np.array_equal(compiled_out, numpy_out)


@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_scatter_add_rejects_outside_ordinals(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "compiled" and vecq.compiled is None:
        pytest.skip("the compiled kernels are not built (or not used)")
    if path == "numpy":
        monkeypatch.setattr(dense, "compiled", None)
    out = np.zeros(10)
    for bad in ([3, 10], [-1, 2]):
        with pytest.raises(IndexError):
            dense.scatter_add(out, np.array(bad, np.int32), np.ones(2), 1.0)
        assert not out.any()  # nothing added before the check failed
    dense.scatter_add(out, np.array([9, 0], np.int32), np.array([0.5, 0.25]), 2.0)
    assert out[9] == 1.0 and out[0] == 0.5 and out[1:9].sum() == 0
