"""The vector channel's int8 scan and exact rescoring

A :class:`goclaw_search.index.SearchIndex` keeps its float32 matrix of unit rows (the source
of truth) and, per row, an int8 copy ``q8`` of the row *centred* on the index's centre ``mu``
(``x = v - mu``; ``mu``: the mean of the first rows with a vector) with its scale ``s``, error
``err = ||x - s q8||`` and norm ``||x||`` (:func:`quantize`). Centring matters: a static
embedder's vectors share a large common component (two coordinates near 0.5 in every row of
the default model), which would set every row's int8 step; centred, the error is 5x smaller. A
query ``q`` (a unit float32 vector) is quantized too (``t``, ``qhat``) and :func:`scan` gives
every row a lower and an upper bound on its cosine from one int8 x int8 dot product, reading a
quarter of the float32 matrix's bytes:

    |q . v - (q . mu + s t (qhat . q8))| = |q . x - s t (qhat . q8)|
        <= ||q - t qhat|| ||x|| + ||t qhat|| ||x - s q8|| = eq norm + m err

plus a slack for every float rounding (the bounds' own, and the exact cosine's). The fusion
(:func:`goclaw_search.fusion.fuse_bounded`) then computes :func:`exact` cosines for the few
slots whose bounds reach its cut only.

**The exact cosine** of a row is defined once, so a result never depends on the path that found
it (BLAS gives a row's product different last bits by its position in the matrix and by the
number of threads): each product in float64 (exact, for float32 factors), summed in 16 lanes
(lane ``l`` sums the elements ``j = l mod 16`` in order), the lanes added pairwise (8, 4, 2, 1),
rounded to float32. The compiled kernels (``libs/goclaw_search/_vec.pyx``, Cython) and the
numpy versions below compute exactly that, and the same bits for every other figure.

The compiled module is optional: a wheel built without a C compiler has none, and
``GOCLAW_SEARCH_NUMPY=1`` in the environment leaves it unused (the tests run both). Without it
the scan is the float32 BLAS product with a rounding-error bound instead (:func:`blas_bounds`),
and the rescoring runs in numpy: the same results, more time.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from goclaw_search.fusion import _ranked

if TYPE_CHECKING:
    from numpy.typing import NDArray

LANES = 16
# Every float rounding the bounds do not otherwise count: the scan's own (the bound's terms in
# float64, lo/hi rounded to float32: < 2e-7) and the exact cosine's (float32: < 1e-7).
SLACK = 2.0**-20
# SearchIndex.fuse's weighted fusion takes the one-pass fuse_scan (False: the scan's bounds,
# then fusion.fuse_bounded; the tests compare both)
FUSE_IN_SCAN = True


__all__ = [
    "Query",
    "blas_bounds",
    "centre",
    "compiled",
    "exact",
    "fuse_scan",
    "prepare",
    "quantize",
    "scan",
    "unit",
]

compiled: Any = None
if os.environ.get("GOCLAW_SEARCH_NUMPY") != "1":
    try:  # the optional compiled kernels (setup.py builds them where a C compiler is)
        from goclaw_search import _vec as compiled
    except ImportError:  # pragma: no cover - a build without a C compiler
        compiled = None


class Query(NamedTuple):
    """A unit query as the int8 scan needs it (:func:`prepare`)."""

    unit: NDArray[np.float32]
    qhat: NDArray[np.int8]
    t: float  # qhat's scale
    eq: float  # ||unit - t qhat||, rounded up
    m: float  # ||t qhat||, rounded up


def _up(x: float) -> float:
    """``x`` a little larger: float64 rounding of the norms below (relative 1e-15) covered."""
    return x * (1.0 + 1e-12) + 1e-300


def centre(vec: NDArray[np.float32], count: int | None = None) -> NDArray[np.float32]:
    """The centre of an index's int8 copies: the mean of the rows with a vector (``count`` of
    them; the others are zero rows, which add nothing), summed in float64 without a copy of
    ``vec``. Any vector would do for exactness; the mean makes the centred rows small."""
    rows = len(vec) if count is None else count
    if not rows:
        return np.zeros(vec.shape[1], dtype=np.float32)
    total = np.add.reduce(vec, axis=0, dtype=np.float64)
    mu: NDArray[np.float32] = (total / rows).astype(np.float32)
    return mu


def _rounded_up(x: NDArray[np.float64]) -> NDArray[np.float32]:
    bound = x * (1.0 + 2.0**-20) + 1e-9
    out = bound.astype(np.float32)
    low = out.astype(np.float64) < bound
    out[low] = np.nextafter(out[low], np.float32(np.inf))
    return out


def quantize_numpy(
    vec: NDArray[np.float32], mu: NDArray[np.float32]
) -> tuple[NDArray[np.int8], NDArray[np.float32], NDArray[np.float32], NDArray[np.float32]]:
    """:func:`quantize` in numpy: ``(q8, scale, err, norm)`` of the rows of ``vec`` (the same
    ``q8`` and ``scale`` bits as the compiled kernel; ``err`` and ``norm`` within an ulp, their
    float64 sums in another order)."""
    n, d = vec.shape
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        x = vec.astype(np.float64) - mu.astype(np.float64)
        top = np.abs(vec).max(axis=1) if d else np.zeros(n, dtype=np.float32)
        topd = np.abs(x).max(axis=1) if d else np.zeros(n)
        finite = np.isfinite(top) & np.isfinite(topd)
        s = (topd / 127.0).astype(np.float32)
        s[~finite | (top == 0)] = 0.0
        div = np.where(s > 0, s.astype(np.float64), np.inf)
        r = np.clip(np.rint(np.where(finite[:, None], x, 0.0) / div[:, None]), -127, 127)
        r[top == 0] = 0.0
        diff = x - s.astype(np.float64)[:, None] * r
        err = _rounded_up(np.sqrt(np.einsum("ij,ij->i", diff, diff)))
        norm = _rounded_up(np.sqrt(np.einsum("ij,ij->i", x, x)))
        err[~finite] = norm[~finite] = np.inf
        err[top == 0] = norm[top == 0] = 0.0  # a zero row: its cosine is exactly 0 (see scan)
    return r.astype(np.int8), s, err, norm


def quantize(
    vec: NDArray[np.float32],
    mu: NDArray[np.float32],
    q8: NDArray[np.int8],
    scale: NDArray[np.float32],
    err: NDArray[np.float32],
    norm: NDArray[np.float32],
    *,
    use_compiled: bool = True,
) -> None:
    """Fill ``q8``, ``scale``, ``err`` and ``norm`` (one row / item per row of ``vec``,
    C-contiguous) with each row's int8 copy about the centre ``mu``, its scale, error and norm
    (module docstring). A row with a NaN or an infinity gets infinite bounds: always rescored;
    a zero row (no vector) scale, error and norm 0, which :func:`scan` reads as the exact 0."""
    if compiled is not None and use_compiled:
        compiled.quantize(vec, mu, q8, scale, err, norm)
        return
    q8[...], scale[...], err[...], norm[...] = quantize_numpy(vec, mu)


def unit(query_vector: Any, dim: int) -> NDArray[np.float32] | None:
    """The query as a float32 unit vector (``None`` when it is zero, not finite or not of ``dim``
    numbers): the query every cosine of an index is computed with."""
    q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(q))
    if q.shape[0] != dim or not norm > 0.0 or not math.isfinite(norm):
        return None
    out: NDArray[np.float32] = q / norm
    return out


def prepare(q: NDArray[np.float32]) -> Query:
    """``q`` (a unit float32 vector) quantized for :func:`scan`, with its error terms."""
    top = float(np.abs(q).max()) if len(q) else 0.0
    t = top / 127.0 if top > 0 else 1.0
    qhat = np.clip(np.rint(q.astype(np.float64) / t), -127, 127)
    approx = t * qhat
    eq = _up(float(np.linalg.norm(q.astype(np.float64) - approx)))
    return Query(q, qhat.astype(np.int8), t, eq, _up(float(np.linalg.norm(approx))))


def scan(
    q8: NDArray[np.int8],
    scale: NDArray[np.float32],
    err: NDArray[np.float32],
    norm: NDArray[np.float32],
    mu: NDArray[np.float32],
    query: Query,
    *,
    use_compiled: bool = True,
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """Lower and upper bounds on every row's exact cosine (:func:`exact`) to ``query``, from
    the rows' int8 copies about the centre ``mu``."""
    n = len(q8)
    lo = np.empty(n, dtype=np.float32)
    hi = np.empty(n, dtype=np.float32)
    slack = SLACK + q8.shape[1] * 2.0**-50
    mq = float(mu.astype(np.float64) @ query.unit.astype(np.float64)) if len(mu) else 0.0
    if compiled is not None and use_compiled:
        compiled.scan(q8, scale, err, norm, query.qhat, lo, hi, query.t, query.eq, query.m, mq, slack)
        return lo, hi
    dots = q8.astype(np.int32) @ query.qhat.astype(np.int32)
    a = mq + scale.astype(np.float64) * query.t * dots
    r = query.eq * norm.astype(np.float64) + query.m * err.astype(np.float64) + slack
    zero = (scale == 0) & (err == 0)
    lo[...] = np.where(zero, 0.0, a - r)
    hi[...] = np.where(zero, 0.0, a + r)
    return lo, hi


class Scanned(NamedTuple):
    """:func:`fuse_scan`'s answer: :class:`goclaw_search.fusion.Fused`'s lists and how many
    slots were rescored exactly."""

    slots: list[int]
    scores: list[float]
    lexical: list[float] | None
    vector: list[float]
    rescored: int


def fuse_scan(
    q8: NDArray[np.int8],
    scale: NDArray[np.float32],
    err: NDArray[np.float32],
    norm: NDArray[np.float32],
    mu: NDArray[np.float32],
    vec: NDArray[np.float32],
    unit: NDArray[np.float32],
    lexical: NDArray[np.float32] | None,
    mask: NDArray[np.bool_] | None,
    boost: NDArray[np.float32] | None,
    *,
    limit: int,
    text_weight: float,
    vector_weight: float,
) -> Scanned | None:
    """The ``weighted`` :func:`goclaw_search.fusion.fuse_bounded` of ``lexical`` and the
    exact cosines of the rows of ``vec`` to ``unit``, the int8 scan in one compiled pass
    (``_vec.fuse_cut``): each slot gets bounds on its fused score and the slots that can reach
    the ``limit``-th best lower bound are kept in the same pass; those are rescored exactly
    and ranked here (fusion.py ``_ranked``'s float32 operations). The same slots, order and
    scores. ``None`` when it cannot decide alone (no compiled module, a ``limit`` outside
    ``1..len(q8)``, an array of another type, a value that is not finite, or no lower bound in
    scope above 0, so whether the vector channel counts is open): then the caller takes the
    two-pass path, which settles every case."""
    n = len(q8)
    if compiled is None or not 0 < limit <= n:
        return None
    for array, dtype in ((lexical, np.float32), (mask, np.bool_), (boost, np.float32)):
        if array is not None and (array.dtype != dtype or not array.flags.c_contiguous):
            return None
    slack = SLACK + q8.shape[1] * 2.0**-50
    got = compiled.fuse_cut(
        q8, scale, err, norm, mu, unit, lexical, mask, boost, text_weight, vector_weight, limit, slack
    )
    if got is None:
        return None
    cand, _best_lo, best_lex = got
    tw, vw = (text_weight, vector_weight) if best_lex > 0 else (0.0, 1.0)
    fused = _ranked(lexical, cand, exact(vec, unit, cand), best_lex, tw, vw, boost, limit)
    return Scanned(fused.slots, fused.scores, fused.lexical, fused.vector, len(cand))


def blas_bounds(
    vec: NDArray[np.float32], q: NDArray[np.float32]
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """Bounds on every row's exact cosine from the float32 BLAS product (the scan without the C
    module): a float32 dot of ``d`` terms is within ``d u / (1 - d u)`` (``u = 2**-24``) of
    ``sum |v_j q_j| <= ||v|| ||q||`` of the true value, in any summation order; doubled, with
    rows of norm up to ``1 + 1e-3``."""
    d = vec.shape[1]
    a = vec @ q
    gamma = 2.0 * d * 2.0**-24 / (1.0 - d * 2.0**-24) * 1.001 * float(np.linalg.norm(q.astype(np.float64)))
    r = np.float32(gamma + SLACK)
    return a - r, a + r


def exact(
    vec: NDArray[np.float32],
    q: NDArray[np.float32],
    slots: NDArray[np.int64] | None = None,
    *,
    use_compiled: bool = True,
) -> NDArray[np.float32]:
    """The exact cosine (module docstring) of the rows ``slots`` of ``vec`` (all rows when
    ``None``) to the unit query ``q``."""
    k = len(vec) if slots is None else len(slots)
    out = np.empty(k, dtype=np.float32)
    if compiled is not None and use_compiled:
        compiled.exact(vec, q, None if slots is None else np.ascontiguousarray(slots, dtype=np.int64), out)
        return out
    if not k:
        return out
    d = vec.shape[1]
    rows = vec if slots is None else vec[slots]
    pad = -d % LANES
    prod = rows.astype(np.float64) * q.astype(np.float64)
    if pad:
        prod = np.concatenate([prod, np.zeros((k, pad))], axis=1)
    blocks = prod.reshape(k, -1, LANES)
    acc = np.zeros((k, LANES))
    for b in range(blocks.shape[1]):  # each lane in order of j, as the compiled loop
        acc += blocks[:, b, :]
    width = LANES // 2
    while width:
        acc = acc[:, :width] + acc[:, width : 2 * width]
        width //= 2
    out[...] = acc[:, 0]
    return out
