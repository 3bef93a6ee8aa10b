"""The exact ranking of the ``postgresql`` backend, without a cosine for every chunk.

The in-memory engine scores every chunk of the scope on both channels: BM25 (k1 1.2, b 0.75,
Lucene's IDF, statistics of the agent's whole collection) and cosine, then fuses them. The
database holds the same statistics (``memory_term_stats`` / ``memory_agent_stats``, kept by
triggers in the writing transaction) and the packed postings (:mod:`goclaw_memory.pg_postings`),
so the backend computes the exact BM25 of every chunk holding a query term. Cosines come from
the nearest chunks by vector and, for the chunks of highest BM25, one by one; what remains is to
*prove* that the chunks without a cosine cannot reach the result:

* :func:`budget`: the BM25 below which a chunk without a cosine, and not among the nearest
  chunks by vector, cannot enter the fused top ``k`` of those with one (its fused score is at
  most ``text_weight × BM25 / best BM25 + vector_weight × the lowest cosine of the nearest``).
  Below it, the search is settled (:func:`settled`); else more of the best by BM25 get theirs.

The vector side is as exact as its nearest-neighbour search (an exact scan for agents up to
:func:`exact_line` chunks, HNSW with iterative scans above).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

# Agents with at most this many chunks are searched by an exact vector scan (their rows by the
# scope index: ~1.5 ms per 1,000), larger ones through HNSW unless the table is so much larger
# that the walk would mostly meet other agents' chunks (:func:`exact_line`).
EXACT_VECTOR_SCAN = 2_000
# An exact scan costs ~1.5 us per chunk of the agent; an HNSW walk ~1.5 ms divided by the
# agent's share of the table's rows (a filtered walk meets the others' chunks too). They cost
# the same at n = sqrt(SCAN_RATIO x rows).
SCAN_RATIO = 1_000


def exact_line(rows: float, least: int = EXACT_VECTOR_SCAN, ratio: float = SCAN_RATIO) -> int:
    """The agent size up to which a vector search scans exactly, in a table of ``rows`` chunks
    (all agents): ``least``, or where an exact scan and an HNSW walk cost the same when that is
    more. 100,000 rows: an agent of 10,000 walks HNSW (~1.5 ms, not a 15 ms scan); 1.1 million
    rows: one of 10,000 scans (a walk filtered to 1 % of the graph would visit ~100 times more)."""
    return max(int(least), int(math.sqrt(max(ratio, 0.0) * max(rows, 0.0))))


def idf(df: float, n: float) -> float:
    """Lucene's BM25 IDF, as :mod:`goclaw_search.index` computes it."""
    d = min(df, n)
    return math.log(1.0 + (n - d + 0.5) / (d + 0.5))


def settled(bm25: np.ndarray, cosine: np.ndarray | None, *, rest_bm25: float, **kw: Any) -> bool:
    """Whether the chunks read (their exact ``bm25`` and ``cosine``) settle the fused top ``k``:
    no chunk left unread, whose BM25 is at most ``rest_bm25``, can enter it (:func:`budget`)."""
    return rest_bm25 <= 0 or rest_bm25 < budget(bm25, cosine, **kw)


def budget(
    bm25: np.ndarray,
    cosine: np.ndarray | None,
    *,
    rest_cosine: float,
    k: int,
    method: str,
    text_weight: float,
    vector_weight: float,
    boost: np.ndarray | None,
    pool: int,
) -> float:
    """The BM25 below which a chunk not read (and, for the vector channel, of cosine at most
    ``rest_cosine``) cannot enter the fused top ``k`` of the chunks read (exact ``bm25`` and
    ``cosine``); 0 when any could. Never above the best BM25 read (the weighted fusion's
    divisor). ``weighted``: the chunk's fused bound must stay below the ``k``-th best fused
    score read. The other methods rank each channel's top ``pool``: below the ``pool``-th best
    BM25 read."""
    best = float(bm25.max()) if len(bm25) else 0.0
    if best <= 0:
        return 0.0
    if method != "weighted":
        ranked = np.sort(bm25)[::-1]
        return min(best, float(ranked[pool - 1])) if len(ranked) >= pool else 0.0
    vec = np.maximum(cosine, 0.0) if cosine is not None else None
    has_vec = vec is not None and bool((vec > 0).any())
    tw, vw = (text_weight, vector_weight) if has_vec else (1.0, 0.0)
    fused = tw * bm25 / best
    if has_vec and vec is not None:
        fused = fused + vw * vec
    top_boost = 1.0
    if boost is not None:
        fused = fused * boost
        top_boost = max(1.0, float(boost.max()) if len(boost) else 1.0)
    positive = fused[fused > 0]
    if len(positive) < k:
        return 0.0
    kth = float(np.partition(positive, len(positive) - k)[len(positive) - k])
    room = kth / top_boost - vw * max(rest_cosine, 0.0)
    if room <= 0:
        return 0.0
    return best if tw <= 0 else min(best, room * best / tw)
