"""The exact ranking of the ``postgresql`` backend, without scoring every chunk.

The in-memory engine scores every chunk of the scope on both channels: BM25 (k1 1.2, b 0.75,
Lucene's IDF, statistics of the agent's whole collection) and cosine, then fuses them. The
database holds the same statistics (``memory_term_stats`` / ``memory_agent_stats``, kept by
triggers in the writing transaction), so any chunk's BM25 is exact once its terms are read.
What remains is to read only the chunks that can reach the result, and to *prove* that the
rest cannot (the MaxScore idea of top-k retrieval):

* each query term has an upper bound on what it adds to a chunk's BM25 (its IDF and the
  largest term frequency the agent ever had for it, at the shortest length);
* the chunks matching the *essential* terms (rarest first) are read with their terms and
  cosine, plus the nearest chunks by vector; every one of them is scored exactly;
* a chunk not read matches only the other terms and is not among the nearest: its fused score
  is at most ``text_weight × (sum of those terms' bounds) / best BM25 + vector_weight ×
  (the lowest cosine of the nearest)``. When that is below the ``k``-th best fused score read,
  the result is the engine's; else the next term becomes essential and its chunks are read.

When every term is essential the lexical channel is complete: BM25 is exact for every matching
chunk. The vector side is as exact as its nearest-neighbour search (an exact scan for agents
up to :data:`EXACT_VECTOR_SCAN` chunks, HNSW with iterative scans above).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from goclaw_memory.pg_postings import factor_bound
from goclaw_memory.pg_text import K1, B

# Agents with at most this many chunks are searched by an exact vector scan (their rows by the
# scope index: ~1 ms per 1,000), larger ones through HNSW.
EXACT_VECTOR_SCAN = 10_000


@dataclass(frozen=True)
class TermStats:
    """The agent's document frequency of a term and the largest frequency in one chunk."""

    df: int
    max_tf: int


def idf(df: float, n: float) -> float:
    """Lucene's BM25 IDF, as :mod:`goclaw_search.index` computes it."""
    d = min(df, n)
    return math.log(1.0 + (n - d + 0.5) / (d + 0.5))


def term_bound(idf_value: float, max_tf: int) -> float:
    """The most a term adds to any chunk's BM25: at its largest frequency, in a chunk of
    length 0 (BM25 grows with tf and shrinks with length)."""
    tf = max(1, int(max_tf))
    return idf_value * tf * (K1 + 1) / (tf + K1 * (1 - B))


class Postings:
    """How far each query term's impact-ordered list (:mod:`goclaw_memory.pg_postings`) was
    read, and what the rows not read can still add to a chunk's BM25.

    Every term the agent has starts with its first ``first`` rows; :meth:`deeper` asks for four
    times more of each list not read to its end. A list read to its end adds nothing to a chunk
    not read; another adds at most its IDF × (k1 + 1) × the factor bound of its last row read
    (and never more than :func:`term_bound`)."""

    def __init__(
        self,
        terms: Sequence[str],
        stats: Mapping[str, TermStats],
        n: float,
        avgdl: float,
        ref: float,
        *,
        first: int,
    ) -> None:
        self.idfs = {t: idf(s.df, n) for t, s in stats.items()}
        # A term twice in the query counts twice in BM25 (goclaw_memory.pg_text.bm25_from_lex).
        self.times = {t: list(terms).count(t) for t in dict.fromkeys(terms) if t in stats}
        self.cap = {t: term_bound(self.idfs[t], stats[t].max_tf) for t in self.times}
        self.rho = min(1.0, ref / avgdl) if avgdl > 0 else 1.0
        self.offset = dict.fromkeys(self.times, 0)
        self.step = dict.fromkeys(self.times, max(1, first))
        self.last: dict[str, float | None] = dict.fromkeys(self.times)
        self.finished: set[str] = set()
        self.pending = bool(self.times)

    @property
    def unread(self) -> list[tuple[str, int, int]]:
        """``(term, offset, count)`` of the rows to read next (none until :meth:`deeper`)."""
        if not self.pending:
            return []
        return [(t, self.offset[t], self.step[t]) for t in self.times if t not in self.finished]

    def read(self, impacts: Mapping[str, Sequence[float]]) -> None:
        """Note the impacts of the rows :attr:`unread` asked for."""
        for t, _offset, count in self.unread:
            got = impacts.get(t, ())
            self.offset[t] += len(got)
            if len(got) < count:
                self.finished.add(t)
            else:
                self.last[t] = min(got)
        self.pending = False

    def deeper(self) -> None:
        for t in self.step:
            self.step[t] *= 4
        self.pending = True

    def rest(self) -> float:
        """The most a chunk not read yet can have as BM25."""
        total = 0.0
        for t, times in self.times.items():
            if t in self.finished:
                continue
            last = self.last[t]
            bound = self.cap[t]
            if last is not None:
                bound = min(bound, self.idfs[t] * (K1 + 1) * factor_bound(last, self.rho))
            total += times * bound
        return total


def settled(
    bm25: np.ndarray,
    cosine: np.ndarray | None,
    *,
    rest_bm25: float,
    rest_cosine: float,
    k: int,
    method: str,
    text_weight: float,
    vector_weight: float,
    boost: np.ndarray | None,
    pool: int,
) -> bool:
    """Whether the chunks read (their exact ``bm25`` and ``cosine``) settle the fused top ``k``:
    no chunk left unread, whose BM25 is at most ``rest_bm25`` and cosine at most
    ``rest_cosine``, can enter it. ``weighted``: its fused bound is below the ``k``-th best
    fused score read. The other methods rank each channel's top ``pool``: the lexical one is
    settled when ``rest_bm25`` is below the ``pool``-th best BM25 read."""
    best = float(bm25.max()) if len(bm25) else 0.0
    if rest_bm25 > 0 and rest_bm25 >= best:
        return False  # the best BM25 (the weighted fusion's divisor) may be unread
    if method != "weighted":
        if rest_bm25 <= 0:
            return True
        ranked = np.sort(bm25)[::-1]
        return len(ranked) >= pool and rest_bm25 < float(ranked[pool - 1])
    vec = np.maximum(cosine, 0.0) if cosine is not None else None
    has_lex = best > 0
    has_vec = vec is not None and bool((vec > 0).any())
    if not has_lex and not has_vec:
        return rest_bm25 <= 0
    tw, vw = (text_weight, vector_weight) if has_lex and has_vec else ((1.0, 0.0) if has_lex else (0.0, 1.0))
    fused = np.zeros(len(bm25))
    if has_lex:
        fused += tw * bm25 / best
    if has_vec and vec is not None:
        fused += vw * vec
    top_boost = 1.0
    if boost is not None:
        fused = fused * boost
        top_boost = max(1.0, float(boost.max()) if len(boost) else 1.0)
    bound = ((tw * rest_bm25 / best if has_lex else 0.0) + vw * max(rest_cosine, 0.0)) * top_boost
    if bound <= 0:
        return True
    positive = fused[fused > 0]
    if len(positive) < k:
        return False
    kth = float(np.partition(positive, len(positive) - k)[len(positive) - k])
    return bound < kth
