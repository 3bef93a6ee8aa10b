"""The vector channel's kernels (libs/goclaw_search/_vec.pyx, Cython, and
libs/goclaw_search/vecq.py's numpy versions): the exact cosine, the int8 copies and the scan's
bounds are the same bits from both; the bounds hold the exact cosine on random and adversarial
rows; bad arrays raise; the one-pass fusion (vecq.fuse_scan) gives the exact result; with
GOCLAW_SEARCH_NUMPY=1 (and so in a build without a C compiler) a search gives the same hits."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goclaw_search import vecq
from goclaw_search.fusion import fuse_lists
from tests.libs.search.clustered import WORDS, _index, _query, _same, _two_pass

needs_c = pytest.mark.skipif(vecq.compiled is None, reason="the compiled kernels are not built (or not used)")
DIMS = (1, 7, 16, 17, 31, 32, 33, 100, 256, 384)


def _rows(rng: np.random.Generator, n: int, d: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    """Unit rows of several shapes: dense, sparse, one large coordinate, tiny values, a zero row."""
    m = rng.standard_normal((n, d)).astype(np.float32)
    m[1::5] *= rng.random((len(m[1::5]), d)) < 0.1  # sparse
    m[2::5, 0] *= 40.0  # one coordinate dominates (a coarse int8 step)
    m[3::5] *= np.float32(1e-30)  # tiny before normalisation
    m[4::5] = np.round(m[4::5])  # small integers: many exact halves when quantized
    norms = np.linalg.norm(m.astype(np.float64), axis=1)
    m = (m / np.where(norms > 0, norms, 1.0)[:, None]).astype(np.float32)
    m[0] = 0.0
    return m


def _quantized(m: np.ndarray[Any, Any], mu: Any) -> tuple[Any, Any, Any, Any]:
    q8 = np.empty(m.shape, dtype=np.int8)
    s, e, nrm = (np.empty(len(m), dtype=np.float32) for _ in range(3))
    vecq.quantize(m, mu, q8, s, e, nrm)
    return q8, s, e, nrm


def _centres(m: np.ndarray[Any, Any]) -> list[Any]:
    """No centre, the rows' mean, and a centre far from the rows."""
    d = m.shape[1]
    return [np.zeros(d, dtype=np.float32), vecq.centre(m), np.full(d, 0.7, dtype=np.float32)]


@pytest.mark.parametrize("d", DIMS)
def test_exact_is_the_same_bits_compiled_and_numpy(d: int) -> None:
    rng = np.random.default_rng(d)
    m = _rows(rng, 203, d)
    q = vecq.unit(rng.standard_normal(d), d)
    assert q is not None
    full = vecq.exact(m, q)
    assert np.array_equal(full, vecq.exact(m, q, use_compiled=False))
    slots = rng.integers(0, len(m), 40)
    assert np.array_equal(vecq.exact(m, q, slots), full[slots])
    assert np.array_equal(vecq.exact(m, q, slots, use_compiled=False), full[slots])
    # within a float32 rounding of the float64 product; a zero row is exactly 0
    ref = m.astype(np.float64) @ q.astype(np.float64)
    assert np.abs(full - ref).max() <= 1e-7
    assert full[0] == 0.0
    # duplicate rows anywhere: the same bits (BLAS does not promise that)
    dup = np.concatenate([m[5:6], m, m[5:6]])
    got = vecq.exact(dup, q)
    assert got[0] == got[6] == got[-1]


@pytest.mark.parametrize("d", DIMS)
def test_quantize_compiled_and_numpy_agree_and_bound_the_error(d: int) -> None:
    rng = np.random.default_rng(100 + d)
    m = _rows(rng, 157, d)
    m[5] = m[6] = vecq.centre(m)  # rows equal to the centre
    m[6] /= np.linalg.norm(m[6])
    for mu in _centres(m):
        q8, s, e, nrm = _quantized(m, mu)
        q8n, sn, en, nn = vecq.quantize_numpy(m, mu)
        assert np.array_equal(q8, q8n) and np.array_equal(s, sn)
        np.testing.assert_allclose(e, en, rtol=2e-7)
        np.testing.assert_allclose(nrm, nn, rtol=2e-7)
        assert np.abs(q8.astype(np.int16)).max() <= 127
        x = m.astype(np.float64) - mu.astype(np.float64)
        x[~m.any(axis=1)] = 0.0  # zero rows are not centred: they stay exactly zero
        assert (np.linalg.norm(x - s.astype(np.float64)[:, None] * q8, axis=1) <= e).all()
        assert (np.linalg.norm(x, axis=1) <= nrm).all()
        assert s[0] == e[0] == nrm[0] == 0.0 and not q8[0].any()


def test_quantize_marks_rows_it_cannot_bound() -> None:
    m = np.ones((3, 8), dtype=np.float32) / np.float32(np.sqrt(8))
    m[1, 3] = np.nan
    m[2, 0] = np.inf
    for use in (True, False):
        q8 = np.empty(m.shape, dtype=np.int8)
        s, e, nrm = (np.empty(3, dtype=np.float32) for _ in range(3))
        vecq.quantize(m, np.zeros(8, dtype=np.float32), q8, s, e, nrm, use_compiled=use)
        assert np.isfinite(e[0]) and np.isinf(e[1:]).all() and np.isinf(nrm[1:]).all() and not q8[1:].any()


@pytest.mark.parametrize("d", (*DIMS, 64, 65, 95, 128, 256))
def test_scan_is_the_same_bits_compiled_and_numpy(d: int) -> None:
    """The int8 dots are exact: the same bounds, whatever the row count and the block of 256 rows."""
    rng = np.random.default_rng(d)
    for n in (1, 3, 4, 5, 259, 517):
        m = _rows(rng, n, d)
        mu = vecq.centre(m)
        q8, s, e, nrm = _quantized(m, mu)
        q8[n // 2] = rng.integers(-127, 128, d)  # any int8 row, extremes included
        q = vecq.unit(rng.standard_normal(d), d)
        assert q is not None
        query = vecq.prepare(q)
        query = query._replace(qhat=np.where(rng.random(d) < 0.3, -127, query.qhat).astype(np.int8))
        want = vecq.scan(q8, s, e, nrm, mu, query, use_compiled=False)
        got = vecq.scan(q8, s, e, nrm, mu, query)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        dots = q8.astype(np.int64) @ query.qhat.astype(np.int64)
        assert np.abs(dots).max() <= 127 * 127 * d


@pytest.mark.parametrize("d", DIMS)
def test_scan_bounds_hold_the_exact_cosine(d: int) -> None:
    for seed in range(4):
        rng = np.random.default_rng(seed * 1000 + d)
        m = _rows(rng, 300, d)
        for mu in _centres(m):
            q8, s, e, nrm = _quantized(m, mu)
            raw = [rng.standard_normal(d), m[7] + 1e-3 * rng.standard_normal(d), -m[9], np.eye(d)[0]]
            for qv in raw:
                q = vecq.unit(qv, d)
                if q is None:  # a zero row's negation
                    continue
                query = vecq.prepare(q)
                lo, hi = vecq.scan(q8, s, e, nrm, mu, query)
                lo_n, hi_n = vecq.scan(q8, s, e, nrm, mu, query, use_compiled=False)
                assert np.array_equal(lo, lo_n) and np.array_equal(hi, hi_n)
                ex = vecq.exact(m, q)
                assert ((lo <= ex) & (ex <= hi)).all()
                assert lo[0] == hi[0] == ex[0] == 0.0  # a zero row's bounds are exact
                blo, bhi = vecq.blas_bounds(m, q)
                assert ((blo <= ex) & (ex <= bhi)).all()
                assert float(np.max(bhi - blo)) < 1e-4  # the BLAS bounds are tight


def test_exact_of_no_rows_is_empty() -> None:
    m = np.ones((3, 20), dtype=np.float32)
    q = vecq.unit(np.ones(20), 20)
    assert q is not None
    for use in (True, False):
        assert vecq.exact(m, q, np.zeros(0, dtype=np.int64), use_compiled=use).shape == (0,)
        assert vecq.exact(m[:0], q, use_compiled=use).shape == (0,)


def test_unit_query_refuses_what_has_no_direction() -> None:
    assert vecq.unit(np.zeros(4), 4) is None
    assert vecq.unit([1.0, np.nan, 0, 0], 4) is None
    assert vecq.unit([1.0, 0, 0], 4) is None
    q = vecq.unit([3.0, 4.0, 0, 0], 4)
    assert q is not None and q.dtype == np.float32 and q.tolist() == pytest.approx([0.6, 0.8, 0, 0])


@needs_c
def test_bad_arrays_raise_instead_of_crashing() -> None:
    c: Any = vecq.compiled
    m = np.ones((4, 8), dtype=np.float32)
    q8 = np.zeros((4, 8), dtype=np.int8)
    f4 = np.zeros(4, dtype=np.float32)
    q = np.ones(8, dtype=np.float32)
    qhat = np.ones(8, dtype=np.int8)
    out = np.zeros(4, dtype=np.float32)
    wide = np.zeros((1, 70000), dtype=np.int8)
    mu = np.zeros(8, dtype=np.float32)
    c.quantize(m, mu, q8, f4.copy(), f4.copy(), f4.copy())
    c.scan(q8, f4, f4, f4, qhat, out, out.copy(), 1.0, 0.0, 0.0, 0.0, 0.0)
    c.exact(m, q, np.array([0, 3]), np.zeros(2, dtype=np.float32))
    mask = np.ones(4, dtype=bool)
    cut = (q8, f4, f4, f4, mu, q, f4, mask, f4)
    c.fuse_cut(*cut, 0.3, 0.7, 2, 0.0)
    c.fuse_cut(q8, f4, f4, f4, mu, q, None, None, None, 0.3, 0.7, 4, 0.0)

    def fused(at: int, value: Any, *tail: Any) -> Any:
        args = list(cut)
        args[at] = value
        return lambda: c.fuse_cut(*args, *(tail or (0.3, 0.7, 2, 0.0)))

    bad_calls = [
        lambda: c.quantize(m.astype(np.float64), mu, q8, f4, f4, f4),  # wrong type
        lambda: c.quantize(m, mu, q8[:3], f4, f4, f4),  # wrong shape
        lambda: c.quantize(m, mu, q8, f4[:3], f4, f4),
        lambda: c.quantize(m, mu, q8, f4, f4, f4[:3]),
        lambda: c.quantize(m, mu[:7], q8, f4, f4, f4),
        lambda: c.quantize(m[:, ::2], mu[:4], q8[:, :4], f4, f4, f4),  # not contiguous
        lambda: c.quantize(m, mu, q8, np.zeros(4, dtype=np.float32)[::-1], f4, f4),
        lambda: c.quantize(m, q8),  # missing arguments
        lambda: c.quantize(m.reshape(-1), mu, q8, f4, f4, f4),  # wrong dimensions
        lambda: c.scan(q8, f4, f4, f4, qhat[:7], out, out, 1.0, 0.0, 0.0, 0.0, 0.0),
        lambda: c.scan(q8, f4, f4, f4[:3], qhat, out, out, 1.0, 0.0, 0.0, 0.0, 0.0),
        lambda: c.scan(q8, f4, f4, f4, qhat, out[:3], out, 1.0, 0.0, 0.0, 0.0, 0.0),
        lambda: c.scan(q8, f4, f4, f4, qhat.astype(np.uint8), out, out, 1.0, 0.0, 0.0, 0.0, 0.0),
        lambda: c.scan(q8, f4, f4, f4, qhat, out, out, "x", 0.0, 0.0, 0.0, 0.0),
        lambda: c.scan(q8, f4, f4, f4, qhat, out, out, 1.0, 0.0, 0.0, 0.0),  # missing one
        lambda: c.scan(wide, f4[:1], f4[:1], f4[:1], wide[0], out[:1], out[:1], 1.0, 0.0, 0.0, 0.0, 0.0),
        lambda: c.exact(m, q, np.array([0, 4]), np.zeros(2, dtype=np.float32)),  # slot outside
        lambda: c.exact(m, q, np.array([-1]), np.zeros(1, dtype=np.float32)),
        lambda: c.exact(m, q, np.array([0, 1], dtype=np.int32), np.zeros(2, dtype=np.float32)),
        lambda: c.exact(m, q, np.array([0, 1]), np.zeros(3, dtype=np.float32)),  # out too long
        lambda: c.exact(m, q[:7], None, out),
        lambda: c.exact(m, q, None, out[:3]),
        lambda: c.exact(m, q, None, b"x" * 16),  # read-only output
        lambda: c.exact("vec", q, None, out),
        fused(7, mask[:3]),
        fused(6, f4[:3]),  # lexical
        fused(8, f4[:3]),  # boost
        fused(6, f4.astype(np.float64)),
        fused(4, mu[:7]),
        fused(5, q[:7]),
        fused(0, q8.astype(np.uint8)),
        fused(0, wide),
        fused(0, q8, 0.3, 0.7, 0, 0.0),  # limit out of 1..n
        fused(0, q8, 0.3, 0.7, 5, 0.0),
        fused(0, q8, 0.3, 0.7, "2", 0.0),
        fused(0, q8, "x", 0.7, 2, 0.0),
        lambda: c.fuse_cut(*cut, 0.3, 0.7, 2),  # missing one
    ]
    for call in bad_calls:
        with pytest.raises((ValueError, TypeError, IndexError, BufferError)):
            call()
    ro = np.zeros(4, dtype=np.float32)
    ro.flags.writeable = False
    with pytest.raises((ValueError, BufferError)):
        c.scan(q8, f4, f4, f4, qhat, ro, out, 1.0, 0.0, 0.0, 0.0, 0.0)


@needs_c
def test_one_pass_fusion_is_exact_in_every_edge_case() -> None:
    """The scan and the weighted cut in one compiled pass (vecq.fuse_scan) rescore exactly the
    slots the two-pass path rescores and give the dense exact result: limits from 1 to every
    slot; scopes smaller than the limit; weights with one channel at 0; boosts with zeros;
    lexical scores that are not finite and negative boosts (left to the two-pass path, which
    decides or refuses them as before)."""
    for d, n in ((33, 900), (100, 1100)):
        rng = np.random.default_rng(d + n)
        idx = _index(rng, n, d)
        n = idx.n
        for round_ in range(30):
            unit = idx.unit_query(_query(rng, idx))
            assert unit is not None
            lexical = idx.bm25(list(rng.choice(WORDS, size=3))) if round_ % 5 else None
            mask = [None, idx.scope_filter(["u1"]), np.arange(n) < 5][round_ % 3]
            boost = None if round_ % 4 else (rng.integers(0, 3, n) * 0.5).astype(np.float32)
            limit = [1, 7, 30, n][round_ % 4]
            weights = [(0.3, 0.7), (0.0, 1.0), (1.0, 0.0), (0.7, 0.3)][round_ % 4]
            args: dict[str, Any] = dict(limit=limit, text_weight=weights[0], vector_weight=weights[1])
            want = fuse_lists(lexical, vecq.exact(idx.vec[:n], unit), mask, boost=boost, **args)
            _same(idx.fuse(lexical, unit, mask, boost=boost, scan="int8", **args), want)
            one = idx.rescored
            _same(_two_pass(idx, lexical, unit, mask, boost=boost, **args), want)
            assert idx.rescored == one
        bad = np.ones(n, dtype=np.float32)
        bad[3] = np.nan
        unit = idx.unit_query(idx.vec[5])
        q8 = (idx.q8[:n], idx.q8s[:n], idx.q8e[:n], idx.q8n[:n], idx.q8mu, idx.vec[:n], unit)
        assert vecq.fuse_scan(*q8, bad, None, None, limit=5, text_weight=0.3, vector_weight=0.7) is None
        negative = np.ones(n, dtype=np.float32)
        negative[7] = -1.0
        assert vecq.fuse_scan(*q8, None, None, negative, limit=5, text_weight=0.3, vector_weight=0.7) is None
        with pytest.raises(ValueError, match="negative boost"):
            idx.fuse(None, unit, None, limit=5, boost=negative, scan="int8")


NUMPY_RUN = r"""
import json, sys
import numpy as np
from goclaw_search import vecq
from goclaw_search.index import Doc, SearchIndex
rng = np.random.default_rng(5)
idx = SearchIndex(48)
words = [f"w{i}" for i in range(30)]
idx.upsert([Doc(i, "", list(rng.choice(words, 5)), rng.standard_normal(48)) for i in range(3000)])
out = {"compiled": vecq.compiled is not None, "hits": []}
for k in range(20):
    unit = idx.unit_query(rng.standard_normal(48))
    lexical = idx.bm25(list(rng.choice(words, 2)))
    got = idx.fuse(lexical, unit, None, limit=10)
    out["hits"].append([got.slots, got.scores, got.vector])
print(json.dumps(out))
"""


def _search_run(numpy_only: bool) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "GOCLAW_SEARCH_NUMPY"}
    if numpy_only:
        env["GOCLAW_SEARCH_NUMPY"] = "1"
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", NUMPY_RUN], capture_output=True, text=True, env=env, cwd=root, check=True
    )
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_the_numpy_path_gives_the_same_searches() -> None:
    """GOCLAW_SEARCH_NUMPY=1 leaves the compiled kernels unused (what a build without a C
    compiler has): the same hits, scores and cosines, in a process of its own each."""
    numpy_only = _search_run(True)
    assert numpy_only["compiled"] is False
    default = _search_run(False)
    assert default["compiled"] is (importlib.util.find_spec("goclaw_search._vec") is not None)
    assert numpy_only["hits"] == default["hits"]
    assert all(len(h[0]) == 10 for h in default["hits"])


@needs_c
@pytest.mark.parametrize("d", (1, 17, 31, 32, 33, 64, 95, 256, 384))
def test_the_dot_kernels_give_the_same_bits(d: int) -> None:
    """The int8 dots of the CPU's kernel (AVX-VNNI, AVX512-VNNI or AVX2) and of the portable
    loop: the same bounds and the same one-pass fusion, whatever the row count modulo 4."""
    c: Any = vecq.compiled
    rng = np.random.default_rng(d)
    for n in (1, 3, 4, 5, 259, 517):
        m = _rows(rng, n, d)
        mu = vecq.centre(m)
        q8, s, e, nrm = _quantized(m, mu)
        q8[n // 2] = rng.integers(-127, 128, d)  # any int8 row, extremes included
        q = vecq.unit(rng.standard_normal(d), d)
        assert q is not None
        query = vecq.prepare(q)
        lexical = (rng.random(n) * (rng.random(n) < 0.3)).astype(np.float32)
        got = []
        try:
            for portable in (False, True):
                c.use_portable(portable)
                got.append(
                    (
                        vecq.scan(q8, s, e, nrm, mu, query),
                        vecq.fuse_scan(q8, s, e, nrm, mu, m, q, lexical, None, None, limit=min(n, 7),
                                       text_weight=0.7, vector_weight=0.3),
                    )
                )  # fmt: skip
        finally:
            c.use_portable(False)
        (best, one), (portable_, other) = got
        assert np.array_equal(best[0], portable_[0]) and np.array_equal(best[1], portable_[1]), c.kernel()
        assert one == other
