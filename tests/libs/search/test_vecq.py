"""The vector channel's kernels (libs/goclaw_search/_vec.c, libs/goclaw_search/vecq.py): the exact
cosine is the same bits from the AVX2 kernel, the portable one and numpy; the int8 scan's bounds
hold the exact cosine on random and adversarial rows; bad buffers raise instead of crashing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goclaw_search import vecq

needs_c = pytest.mark.skipif(vecq.compiled is None, reason="the C kernels are not built")
DIMS = (1, 7, 16, 17, 31, 32, 33, 100, 256, 384)


VARIANTS = ("avx512vnni", "avxvnni", "avx2", "portable")


@pytest.fixture(params=VARIANTS)
def simd(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each kernel variant in turn (the portable one everywhere; AVX2 and the VNNI int8 dots
    where the CPU has them)."""
    if vecq.compiled is None:
        yield "numpy"
        return
    vecq.compiled.set_simd(request.param)
    if vecq.compiled.simd() != request.param:
        vecq.compiled.set_simd(True)
        pytest.skip(f"no {request.param} here")
    try:
        yield request.param
    finally:
        vecq.compiled.set_simd(True)


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
def test_exact_is_the_same_bits_in_every_kernel(d: int, simd: str) -> None:
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
def test_quantize_c_and_numpy_agree_and_bound_the_error(d: int, simd: str) -> None:
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


@needs_c
@pytest.mark.parametrize("d", (*DIMS, 64, 65, 95, 128, 256))
def test_scan_is_the_same_bits_in_every_kernel(d: int) -> None:
    """The int8 dots (four rows in flight, a scalar tail of columns and rows) are exact in every
    variant: the same bounds, whatever the row count modulo 4 and the block of 256 rows."""
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
        query = query._replace(qhat=np.where(rng.random(d) < 0.3, -127, query.qhat).astype(np.int8))
        want = vecq.scan(q8, s, e, nrm, mu, query, use_compiled=False)
        dots = q8.astype(np.int64) @ query.qhat.astype(np.int64)
        try:
            for variant in VARIANTS:
                c.set_simd(variant)
                got = vecq.scan(q8, s, e, nrm, mu, query)
                assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), c.simd()
        finally:
            c.set_simd(True)
        assert np.abs(dots).max() <= 127 * 127 * d


@pytest.mark.parametrize("d", DIMS)
def test_scan_bounds_hold_the_exact_cosine(d: int, simd: str) -> None:
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


def test_unit_query_refuses_what_has_no_direction() -> None:
    assert vecq.unit(np.zeros(4), 4) is None
    assert vecq.unit([1.0, np.nan, 0, 0], 4) is None
    assert vecq.unit([1.0, 0, 0], 4) is None
    q = vecq.unit([3.0, 4.0, 0, 0], 4)
    assert q is not None and q.dtype == np.float32 and q.tolist() == pytest.approx([0.6, 0.8, 0, 0])


@needs_c
def test_bad_buffers_raise_instead_of_crashing() -> None:
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
    fuse = (q8, f4, f4, f4, mu, m, q, f4, mask, f4)
    c.fuse_scan(*fuse, 0.3, 0.7, 2, 0.0)
    c.fuse_scan(q8, f4, f4, f4, mu, m, q, None, None, None, 0.3, 0.7, 4, 0.0)

    def fused(at: int, value: Any, *tail: Any) -> Any:
        args = list(fuse)
        args[at] = value
        return lambda: c.fuse_scan(*args, *(tail or (0.3, 0.7, 2, 0.0)))

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
        fused(8, mask.astype(np.uint8)),  # the mask must be bool
        fused(8, mask[:3]),
        fused(7, f4[:3]),  # lexical
        fused(9, f4[:3]),  # boost
        fused(7, f4.astype(np.float64)),
        fused(4, mu[:7]),
        fused(5, m[:3]),  # vec: another row count, another dimension
        fused(5, m[:, :7]),
        fused(5, m.reshape(-1)),
        fused(6, q[:7]),
        fused(0, q8.astype(np.uint8)),
        fused(0, wide),
        fused(0, q8, 0.3, 0.7, 0, 0.0),  # limit out of 1..n
        fused(0, q8, 0.3, 0.7, 5, 0.0),
        fused(0, q8, 0.3, 0.7, "2", 0.0),
        fused(0, q8, "x", 0.7, 2, 0.0),
        lambda: c.fuse_scan(*fuse, 0.3, 0.7, 2),  # missing one
        lambda: c.set_simd("sse9"),
    ]
    for call in bad_calls:
        with pytest.raises((ValueError, TypeError, IndexError, BufferError)):
            call()
    ro = np.zeros(4, dtype=np.float32)
    ro.flags.writeable = False
    with pytest.raises((ValueError, BufferError)):
        c.scan(q8, f4, f4, f4, qhat, ro, out, 1.0, 0.0, 0.0, 0.0, 0.0)


@pytest.mark.parametrize("portable", [False, True])
def test_the_build_hook_builds_the_kernels_portable_ones_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, portable: bool
) -> None:
    """hatch_build.py builds _vec.c; built with only the portable loops (what aarch64 or a
    compiler without the x86 intrinsics gets: GOCLAW_VEC_PORTABLE) it gives the same bits."""
    import importlib.machinery
    import importlib.util
    import shutil
    import sysconfig

    root = Path(__file__).resolve().parents[3]
    spec = importlib.util.spec_from_file_location("goclaw_hatch_build", root / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    assert "libs/goclaw_search/_vec.c" in hook.SOURCES
    cc = str(sysconfig.get_config_var("CC") or "cc")
    if not shutil.which(cc.split()[0]):
        pytest.skip("no C compiler")
    if portable:
        monkeypatch.setenv("CC", cc + " -DGOCLAW_VEC_PORTABLE")
    target = tmp_path / ("_vec" + str(sysconfig.get_config_var("EXT_SUFFIX")))
    assert hook._compile(root / "libs/goclaw_search/_vec.c", target)
    loader = importlib.machinery.ExtensionFileLoader("goclaw_search._vec", str(target))
    found = importlib.util.spec_from_file_location("goclaw_search._vec", target, loader=loader)
    assert found is not None
    module: Any = importlib.util.module_from_spec(found)
    loader.exec_module(module)
    assert vecq._usable(module)
    if portable:
        assert module.simd() == "portable" and module.set_simd(True) is False
    rng = np.random.default_rng(9)
    m = _rows(rng, 120, 100)
    q = vecq.unit(rng.standard_normal(100), 100)
    out = np.empty(len(m), dtype=np.float32)
    module.exact(m, q, None, out)
    assert np.array_equal(out, vecq.exact(m, q, use_compiled=False))
    q8, s, e, nrm = np.empty(m.shape, dtype=np.int8), *(np.empty(120, np.float32) for _ in range(3))
    module.quantize(m, vecq.centre(m), q8, s, e, nrm)
    assert np.array_equal(q8, vecq.quantize_numpy(m, vecq.centre(m))[0])
    lexical = (rng.random(120) * (rng.random(120) < 0.3)).astype(np.float32)
    assert vecq.compiled is not None
    got = [
        kernels.fuse_scan(q8, s, e, nrm, vecq.centre(m), m, q, lexical, None, None, 0.3, 0.7, 10, 1e-6)
        for kernels in (module, vecq.compiled)
    ]
    assert got[0] == got[1] and got[0] is not None and len(got[0][0]) == 10
