"""Fusion of the lexical and vector channels.

Every candidate is scored on **both** channels (its real BM25 and its real cosine) before the
channels are fused; a candidate is never given 0 on a channel because that channel's top-k
happened not to contain it. Methods (``[plugins.memory] fusion``):

``weighted``
    GoClaw's formula: BM25 normalised by the best BM25 of the query's scope,
    × ``text_weight`` (0.7) + cosine × ``vector_weight`` (0.3); a channel with nothing leaves the
    other at weight 1.0. Computed over every document when the channels are dense arrays, so the
    result is exactly the formula applied to every chunk.
``rrf``
    Reciprocal-rank fusion, ``Σ w / (60 + rank)`` over each channel's top ``pool``.
``minmax``
    Both channels min-max normalised over the candidate pool, then weighted.
``zscore``
    Both channels standardised over the candidate pool (distribution-based score fusion), then
    weighted; robust to a channel whose scores are all alike (a weak embedder's cosines).

All functions take dense score arrays over the same slots plus a boolean mask of the slots in
scope; the result is the best ``limit`` slots with their fused score and per-channel scores.
:func:`fuse_bounded` gives the same result from *bounds* on every slot's cosine and the exact
cosine of the few slots that can reach the result (the int8 scan: :mod:`goclaw_search.vecq`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

# The default weights of weighted fusion, the same as the search contract's (tested).
TEXT_WEIGHT = 0.7
VECTOR_WEIGHT = 0.3
METHODS = ("weighted", "rrf", "minmax", "zscore")
RRF_K = 60.0


@dataclass(frozen=True)
class Scored:
    """One fused result: a slot (position in the score arrays) and its scores."""

    slot: int
    score: float
    lexical: float | None  # the channel's normalised score (weighted: BM25 / best BM25)
    vector: float | None  # cosine


def top_slots(scores: NDArray[np.float32], mask: NDArray[np.bool_] | None, k: int) -> NDArray[np.int64]:
    """The ``k`` best slots by score among ``mask`` (ties: lower slot first), best first,
    leaving out slots scoring 0 or less."""
    if mask is not None:
        scores = np.where(mask, scores, np.float32(0.0))
    n = len(scores)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    cand = _at_least_kth(scores, k) if n > k else np.arange(n)
    cand = cand[scores[cand] > 0]
    order = np.lexsort((cand, -scores[cand]))[:k]
    return cand[order].astype(np.int64)


SAMPLE_FROM = 8_192  # above this many slots, guess the cut from a sample first


def _sampled_cut(scores: NDArray[np.float32], k: int) -> float | None:
    """Above :data:`SAMPLE_FROM` scores, a threshold from every 16th: the ~(k/16 + 8)-th best
    of the sample is, almost always, below the ``k``-th best overall, so one comparison pass
    leaves a few hundred candidates (100k slots: ~40 us instead of a 140 us partition of all of
    them). The caller checks that at least ``k`` pass, else partitions everything. ``None``
    below :data:`SAMPLE_FROM`."""
    if len(scores) <= SAMPLE_FROM:
        return None
    sample = scores[::16]
    r = min(len(sample) - 1, k // 16 + 8)
    return float(np.partition(sample, len(sample) - 1 - r)[len(sample) - 1 - r])


def _at_least_kth(scores: NDArray[np.float32], k: int) -> NDArray[np.int64]:
    """The slots scoring at least the ``k``-th best score (``k`` < ``len(scores)``): exactly the
    best ``k`` when no other slot ties the ``k``-th, else every slot tied with it too (so ties
    resolve by slot afterwards)."""
    n = len(scores)
    guess = _sampled_cut(scores, k)
    if guess is not None:
        wide = np.flatnonzero(scores >= guess)
        if len(wide) >= k:
            sub = scores[wide]
            part = np.argpartition(sub, len(sub) - k)
            kth = sub[part[len(sub) - k]]
            top: NDArray[np.int64] = (
                wide[part[len(sub) - k :]] if np.count_nonzero(sub >= kth) == k else wide[sub >= kth]
            )
            return top
    part = np.argpartition(scores, n - k)
    kth = scores[part[n - k]]
    # every slot tied with the k-th stays, so ties resolve by slot
    if np.count_nonzero(scores >= kth) == k:
        return part[n - k :]
    return np.flatnonzero(scores >= kth)


def fuse(
    lexical: NDArray[np.float32] | None,
    vector: NDArray[np.float32] | None,
    mask: NDArray[np.bool_] | None,
    *,
    limit: int,
    method: str = "weighted",
    text_weight: float = TEXT_WEIGHT,
    vector_weight: float = VECTOR_WEIGHT,
    boost: NDArray[np.float32] | None = None,
    pool: int | None = None,
) -> list[Scored]:
    """Fuse dense channel scores (see the module docstring). ``boost`` multiplies each slot's
    fused score (e.g. ×1.2 for a user's own memory). ``pool``: candidates per channel for the
    rank- and distribution-based methods (default ``max(50, 5 × limit)``)."""
    got = fuse_lists(
        lexical,
        vector,
        mask,
        limit=limit,
        method=method,
        text_weight=text_weight,
        vector_weight=vector_weight,
        boost=boost,
        pool=pool,
    )
    lex, vec = got.lexical, got.vector
    return [
        Scored(s, f, None if lex is None else lex[i], None if vec is None else vec[i])
        for i, (s, f) in enumerate(zip(got.slots, got.scores, strict=True))
    ]


class Fused(NamedTuple):
    """:func:`fuse`'s result as parallel lists (no object per result: a search that turns
    them into its own records builds one object per result, not two)."""

    slots: list[int]
    scores: list[float]
    lexical: list[float] | None  # None: the channel did not run
    vector: list[float] | None


# Per-query weights (:func:`query_weights`): the cosines that set a query's gap, and how many
# candidates a search needs for them.
GAP_OF = 20


def query_weights(
    cosines: list[float], text_weight: float, vector_weight: float, slope: float, ref: float
) -> tuple[float, float]:
    """Weighted fusion's ``(text_weight, vector_weight)`` for one query, from its candidates'
    cosines: the vector weight + ``slope`` × (gap − ``ref``), where the gap is how far the best
    cosine stands above the median of the best :data:`GAP_OF`, kept within 0 and the weights'
    sum, which the text weight takes the rest of. A query whose best match in meaning stands out
    from the crowd leans on the vector channel; one whose candidates are all alike in meaning (a
    weak embedder's usual case) leans on full text. ``slope`` 0, or fewer than :data:`GAP_OF`
    cosines (too few candidates to tell a crowd from a standout: a small memory): the weights as
    given."""
    if slope <= 0 or len(cosines) < GAP_OF:
        return text_weight, vector_weight
    top = sorted(cosines, reverse=True)[:GAP_OF]
    half = len(top) // 2
    median = top[half] if len(top) % 2 else (top[half - 1] + top[half]) / 2
    total = text_weight + vector_weight
    vw = min(max(vector_weight + slope * (top[0] - median - ref), 0.0), total)
    return total - vw, vw


def reweighted(
    scores: list[float],
    lexical: list[float | None],
    vector: list[float | None],
    old: tuple[float, float],
    new: tuple[float, float],
) -> list[float]:
    """Weighted-fusion scores with the weights ``old`` changed to ``new``: each score ×
    ``(new text × lexical + new vector × cosine) / (old text × lexical + old vector ×
    cosine)``, so a factor already applied to it (a user boost) stays. A score without both
    channels, or whose fused sum is not positive, is kept."""
    (tw, vw), (tw2, vw2) = old, new
    return [
        score if lex is None or cos is None or (before := tw * lex + vw * cos) <= 0
        else score * (tw2 * lex + vw2 * cos) / before
        for score, lex, cos in zip(scores, lexical, vector, strict=True)
    ]  # fmt: skip


_NOTHING = Fused([], [], None, None)


def fuse_lists(
    lexical: NDArray[np.float32] | None,
    vector: NDArray[np.float32] | None,
    mask: NDArray[np.bool_] | None,
    *,
    limit: int,
    method: str = "weighted",
    text_weight: float = TEXT_WEIGHT,
    vector_weight: float = VECTOR_WEIGHT,
    boost: NDArray[np.float32] | None = None,
    pool: int | None = None,
) -> Fused:
    """:func:`fuse`, its results as parallel lists (:class:`Fused`)."""
    if method not in METHODS:
        raise ValueError(f"unknown fusion method {method!r}; use one of {', '.join(METHODS)}")
    if method == "weighted":
        return _weighted(lexical, vector, mask, limit, text_weight, vector_weight, boost)
    vec_pos = None if vector is None else np.maximum(vector, np.float32(0.0))
    pool = pool or max(50, 5 * limit)
    lex_top = top_slots(lexical, mask, pool) if lexical is not None else np.zeros(0, dtype=np.int64)
    vec_top = top_slots(vec_pos, mask, pool) if vec_pos is not None else np.zeros(0, dtype=np.int64)
    has_lex, has_vec = lex_top.size > 0, vec_top.size > 0
    if not has_lex and not has_vec:
        return _NOTHING
    tw, vw = (text_weight, vector_weight) if has_lex and has_vec else ((1.0, 0.0) if has_lex else (0.0, 1.0))
    best_lex = float(lexical[lex_top[0]]) if has_lex and lexical is not None else 0.0
    cand = np.unique(np.concatenate([lex_top, vec_top]))
    lex_c = lexical[cand].astype(np.float64) if lexical is not None else np.zeros(len(cand))
    vec_c = vec_pos[cand].astype(np.float64) if vec_pos is not None else np.zeros(len(cand))
    if method == "rrf":
        fused_c = np.zeros(len(cand))
        for top, w in ((lex_top, tw), (vec_top, vw)):
            if top.size and w:
                rank = {int(s): r for r, s in enumerate(top)}
                fused_c += np.array([w / (RRF_K + rank[s] + 1) if s in rank else 0.0 for s in cand.tolist()])
    else:
        norm = _minmax if method == "minmax" else _zscore
        fused_c = tw * norm(lex_c, lex_c > 0) + vw * norm(vec_c, vec_c > 0)
    if boost is not None:
        fused_c = fused_c * boost[cand]
    order = np.lexsort((cand, -fused_c))[:limit]
    order = order[fused_c[order] > 0]
    slots = cand[order]
    return Fused(
        slots.tolist(),
        fused_c[order].tolist(),
        # float64 division, as the candidates' own scores
        [x / best_lex for x in lexical[slots].tolist()] if lexical is not None and best_lex > 0 else None,
        vec_pos[slots].tolist() if vector is not None and vec_pos is not None else None,
    )


def _best(scores: NDArray[np.float32] | None, mask: NDArray[np.bool_] | None) -> float:
    """The highest score among ``mask`` (0 when none is positive or nothing is in scope)."""
    if scores is None or not len(scores):
        return 0.0
    if mask is None:
        return max(0.0, float(scores.max()))
    return max(0.0, float(np.max(scores, where=mask, initial=0.0)))


def _weighted(
    lexical: NDArray[np.float32] | None,
    vector: NDArray[np.float32] | None,
    mask: NDArray[np.bool_] | None,
    limit: int,
    text_weight: float,
    vector_weight: float,
    boost: NDArray[np.float32] | None,
) -> Fused:
    """Exact weighted sum over every slot in scope: full text as BM25 / best BM25, the vector
    channel as the clipped cosine; a channel with no positive score in scope gives its weight to
    the other. Only the fused array is ranked (no per-channel candidate pools). Two temporaries
    the size of the collection, no more (at 100k slots each new one costs its page faults)."""
    best_lex = _best(lexical, mask)
    vec_pos = None if vector is None else np.maximum(vector, np.float32(0.0))
    has_lex, has_vec = best_lex > 0, _best(vec_pos, mask) > 0
    if not has_lex and not has_vec:
        return _NOTHING
    tw, vw = (text_weight, vector_weight) if has_lex and has_vec else ((1.0, 0.0) if has_lex else (0.0, 1.0))
    fused: NDArray[np.float32] | None = None
    if has_vec and vec_pos is not None:
        fused = np.multiply(vec_pos, np.float32(vw), out=vec_pos)
    if has_lex and lexical is not None:
        part = lexical * np.float32(tw / best_lex)
        fused = part if fused is None else np.add(part, fused, out=fused)
    assert fused is not None
    if boost is not None:
        fused *= boost
    slots = top_slots(fused, mask, limit)
    return Fused(
        slots.tolist(),
        fused[slots].tolist(),
        (lexical[slots] / np.float32(best_lex)).tolist() if lexical is not None and best_lex > 0 else None,
        np.maximum(vector[slots], np.float32(0.0)).tolist() if vector is not None else None,
    )


def _minmax(x: NDArray[np.float64], present: NDArray[np.bool_]) -> NDArray[np.float64]:
    if not present.any():
        return np.zeros_like(x)
    lo, hi = float(x[present].min()), float(x[present].max())
    if hi <= lo:
        return np.where(present, 1.0, 0.0)
    return np.where(present, (x - lo) / (hi - lo), 0.0)


def _zscore(x: NDArray[np.float64], present: NDArray[np.bool_]) -> NDArray[np.float64]:
    """Distribution-based normalisation: (x - (mean - 3σ)) / 6σ, clipped to 0..1."""
    if not present.any():
        return np.zeros_like(x)
    vals = x[present]
    mean, std = float(vals.mean()), float(vals.std())
    if std <= 1e-12:
        return np.where(present, 1.0, 0.0)
    return np.where(present, np.clip((x - (mean - 3 * std)) / (6 * std), 0.0, 1.0), 0.0)


# ---------------------------------------------------------------------------- from bounds
Exact = Callable[["NDArray[np.int64]"], "NDArray[np.float32]"]


def fuse_bounded(
    lexical: NDArray[np.float32] | None,
    lo: NDArray[np.float32],
    hi: NDArray[np.float32],
    exact: Exact,
    mask: NDArray[np.bool_] | None,
    *,
    limit: int,
    method: str = "weighted",
    text_weight: float = TEXT_WEIGHT,
    vector_weight: float = VECTOR_WEIGHT,
    boost: NDArray[np.float32] | None = None,
    pool: int | None = None,
) -> tuple[Fused, int]:
    """:func:`fuse_lists` of ``lexical`` and the exact cosines ``cos`` of every slot, given only
    bounds ``lo <= cos <= hi`` for every slot and ``exact(slots)``, the exact cosines of some;
    returns the result and how many slots were rescored. The same slots, order and scores as
    :func:`fuse_lists` on the exact cosines, the same float32 operations on them.

    ``weighted``: every slot gets bounds on its fused score (its lexical part is exact); ``L``,
    the ``limit``-th best lower bound in scope, is at most the ``limit``-th best fused score, so
    a slot whose upper bound is below ``L`` cannot be in the result, not even tied; the others
    are rescored and ranked exactly. Whether the vector channel has any positive cosine in scope
    (which decides the weights) is settled the same way. ``rrf`` / ``minmax`` / ``zscore``: the
    vector channel's top ``pool`` by the same cut, plus the lexical top ``pool``, are rescored;
    the other slots never reach the fusion. ``boost`` must not be negative."""
    if method not in METHODS:
        raise ValueError(f"unknown fusion method {method!r}; use one of {', '.join(METHODS)}")
    if boost is not None and len(boost) and float(boost.min()) < 0:
        raise ValueError("fuse_bounded: a negative boost")
    if method == "weighted":
        return _weighted_bounded(lexical, lo, hi, exact, mask, limit, text_weight, vector_weight, boost)
    pool = pool or max(50, 5 * limit)
    zero = np.float32(0.0)
    need = _reaching(np.maximum(lo, zero), np.maximum(hi, zero), mask, pool)
    if lexical is not None:
        need = np.union1d(need, top_slots(lexical, mask, pool))
    vector = np.zeros(len(lo), dtype=np.float32)  # slots not rescored never reach the fusion
    vector[need] = exact(need)
    fused = fuse_lists(
        lexical,
        vector,
        mask,
        limit=limit,
        method=method,
        text_weight=text_weight,
        vector_weight=vector_weight,
        boost=boost,
        pool=pool,
    )
    return fused, len(need)


def _kth_largest(x: NDArray[np.float32], k: int) -> float:
    """The ``k``-th largest value of ``x`` (``0 < k <= len(x)``); above :data:`SAMPLE_FROM`
    values, partitioned among those above a guess from a sample (as :func:`_at_least_kth`)."""
    n = len(x)
    guess = _sampled_cut(x, k)
    if guess is not None:
        wide = x[x >= guess]
        if len(wide) >= k:
            return float(np.partition(wide, len(wide) - k)[len(wide) - k])
    return float(np.partition(x, n - k)[n - k])


def _reaching(
    low: NDArray[np.float32], high: NDArray[np.float32], mask: NDArray[np.bool_] | None, k: int
) -> NDArray[np.int64]:
    """The slots in scope whose score (``low <= score <= high``) can be among the best ``k``
    positive scores in scope: upper bound at least the ``k``-th best lower bound, and above 0."""
    if mask is not None:
        low = np.where(mask, low, np.float32(-np.inf))
    cut = _kth_largest(low, k) if k > 0 and len(low) >= k else 0.0
    reach = high >= np.float32(cut) if cut > 0 else high > 0
    if mask is not None:
        reach &= mask
    return np.flatnonzero(reach)


def _weighted_bounded(
    lexical: NDArray[np.float32] | None,
    lo: NDArray[np.float32],
    hi: NDArray[np.float32],
    exact: Exact,
    mask: NDArray[np.bool_] | None,
    limit: int,
    text_weight: float,
    vector_weight: float,
    boost: NDArray[np.float32] | None,
) -> tuple[Fused, int]:
    """:func:`_weighted` from bounds (see :func:`fuse_bounded`)."""
    zero = np.float32(0.0)
    best_lex = _best(lexical, mask)
    rescored = 0
    # Any positive cosine in scope? A positive lower bound says yes; else the slots whose upper
    # bound is positive decide.
    best_lo = np.max(lo, where=mask, initial=-np.inf) if mask is not None else np.max(lo, initial=-np.inf)
    has_vec = float(best_lo) > 0
    if not has_vec:
        maybe = np.flatnonzero(hi > 0 if mask is None else (hi > 0) & mask)
        rescored = len(maybe)
        has_vec = bool(len(maybe)) and bool((exact(maybe) > 0).any())
    has_lex = best_lex > 0
    if not has_lex and not has_vec:
        return _NOTHING, rescored
    tw, vw = (text_weight, vector_weight) if has_lex and has_vec else ((1.0, 0.0) if has_lex else (0.0, 1.0))
    part = lexical * np.float32(tw / best_lex) if has_lex and lexical is not None else None
    if has_vec:  # float32 rounding is monotonic: these bound the fused score as _weighted rounds it
        low = np.multiply(np.maximum(lo, zero), np.float32(vw))
        high = np.multiply(np.maximum(hi, zero), np.float32(vw))
        if part is not None:
            low, high = np.add(part, low, out=low), np.add(part, high, out=high)
    else:
        assert part is not None
        low = high = part
    if boost is not None:
        low, high = low * boost, high * boost
    cand = _reaching(low, high, mask, limit)
    cos = exact(cand) if has_vec else None
    rescored += len(cand) if has_vec else 0
    return _ranked(lexical, cand, cos, best_lex, tw, vw, boost, limit), rescored


def _ranked(
    lexical: NDArray[np.float32] | None,
    cand: NDArray[np.int64],
    cos: NDArray[np.float32] | None,
    best_lex: float,
    tw: float,
    vw: float,
    boost: NDArray[np.float32] | None,
    limit: int,
) -> Fused:
    """The weighted sum of the candidates ``cand`` (``cos``: their exact cosines; ``None``: the
    vector channel has no weight), ranked: :func:`_weighted`'s float32 operations on them."""
    zero = np.float32(0.0)
    vec_pos = np.maximum(cos, zero) if cos is not None else np.zeros(len(cand), dtype=np.float32)
    fused: NDArray[np.float32] | None = np.multiply(vec_pos, np.float32(vw)) if cos is not None else None
    if best_lex > 0 and lexical is not None:
        part = lexical[cand] * np.float32(tw / best_lex)
        fused = part if fused is None else np.add(part, fused)
    assert fused is not None
    if boost is not None:
        fused = fused * boost[cand]
    keep = fused > 0
    cand, fused, vec_pos = cand[keep], fused[keep], vec_pos[keep]
    order = np.lexsort((cand, -fused))[:limit]
    slots = cand[order]
    return Fused(
        slots.tolist(),
        fused[order].tolist(),
        (lexical[slots] / np.float32(best_lex)).tolist() if lexical is not None and best_lex > 0 else None,
        vec_pos[order].tolist(),
    )
