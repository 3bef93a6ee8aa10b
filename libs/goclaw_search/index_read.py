"""The read side of a :class:`goclaw_search.index.SearchIndex`, a mixin over
its state (:class:`goclaw_search.index_slots.IndexSlots`): scope masks, a term's postings,
BM25 of every slot, the unit query vector, term positions, ids and locations of slots.
:meth:`~goclaw_search.index.SearchIndex.cosine` and
:meth:`~goclaw_search.index.SearchIndex.fuse` stay in :mod:`goclaw_search.index`, beside
the BLAS-thread choice and the dense / int8 threshold they read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from goclaw_search import vecq
from goclaw_search.index_slots import IndexSlots
from goclaw_search.rerank import TermMatches

if TYPE_CHECKING:
    from numpy.typing import NDArray

K1 = 1.2
B = 0.75
# BM25 contributions remembered per index (postings across terms): ~12 bytes each at most
CONTRIB_CACHE = 2_000_000


class IndexReads(IndexSlots):
    """Reads of a search index other than the vector channel's
    :meth:`~goclaw_search.index.SearchIndex.cosine` / :meth:`~goclaw_search.index.SearchIndex.fuse`."""

    def location(self, slot: int) -> tuple[str, int, int] | None:
        """The slot's ``(path, start line, end line)``; ``None`` when not known (a document
        of an index saved before format 6 that :meth:`set_locations` has not filled)."""
        code = int(self.loc_path[slot])
        if code < 0:
            return None
        return self.paths[code], int(self.loc_start[slot]), int(self.loc_end[slot])

    # ------------------------------------------------------------------ postings
    def _postings(self, tid: int) -> tuple[NDArray[np.int32], NDArray[np.float32]]:
        hit = self._merged.get(tid)
        if hit is not None:
            return hit
        parts_s: list[NDArray[np.int32]] = []
        parts_f: list[NDArray[np.float32]] = []
        if tid + 1 < len(self._indptr):
            lo, hi = int(self._indptr[tid]), int(self._indptr[tid + 1])
            parts_s.append(self._slots[lo:hi])
            parts_f.append(self._tf[lo:hi])
        for terms, seg_slots, seg_tf in self._segments:
            lo, hi = np.searchsorted(terms, [tid, tid + 1])
            if hi > lo:
                parts_s.append(seg_slots[lo:hi])
                parts_f.append(seg_tf[lo:hi])
        if len(parts_s) == 1:
            out = (parts_s[0], parts_f[0])
        elif parts_s:
            out = (np.concatenate(parts_s), np.concatenate(parts_f))
        else:
            out = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))
        if len(self._merged) > 4096:
            self._merged.clear()
        self._merged[tid] = out
        return out

    # ------------------------------------------------------------------ scoring
    def scope_mask(self, scopes: Sequence[str] | None) -> NDArray[np.bool_] | None:
        """Live slots of these scopes (``None``: every scope)."""
        alive = self.alive[: self.n]
        if scopes is None:
            return alive
        codes = list({self.scopes[s] for s in scopes if s in self.scopes})  # a repeat counts once
        if not codes:
            return np.zeros(self.n, dtype=np.bool_)
        if len(codes) == len(self.scopes):
            return alive
        allowed = np.zeros(len(self.scopes), dtype=np.bool_)
        allowed[codes] = True
        return alive & allowed[self.scope[: self.n]]

    def scope_filter(self, scopes: Sequence[str] | None) -> NDArray[np.bool_] | None:
        """:meth:`scope_mask`, or ``None`` when it would hold every slot (no dead slot, every
        scope asked for): nothing to filter, and a search skips the masking passes."""
        if self.n_alive == self.n and (
            scopes is None or len(self.scopes.keys() & set(scopes)) == len(self.scopes)
        ):
            return None
        return self.scope_mask(scopes)

    def bm25(self, terms: Sequence[str], counts: Sequence[int] = ()) -> NDArray[np.float32]:
        """BM25 of every slot for these query terms (0 where none matches; dead slots 0); a
        term counts as often as ``counts`` says (aligned with ``terms``; empty: once each)."""
        scores = np.zeros(self.n, dtype=np.float32)
        if not self.n_alive:
            return scores
        norm = self._norm
        if norm is None:
            avgdl = self.total_len / max(1, self.n_alive)
            norm = self._norm = (K1 * (1 - B + B * self.dl[: self.n] / max(avgdl, 1e-9))).astype(np.float32)
        cache = self._contrib
        if cache[0] is not norm:  # the index changed since (every write drops ``_norm``)
            cache = self._contrib = (norm, {}, [0])
        known, size = cache[1], cache[2]
        times = dict(zip(terms, counts, strict=True)) if counts else dict.fromkeys(terms, 1)
        for term, count in times.items():
            tid = self.term_id(term)
            if tid is None:
                continue
            found = known.get(tid)
            if found is None:
                found = known[tid] = self._term_contrib(tid, norm)
                size[0] += len(found[0])
                if size[0] > CONTRIB_CACHE:  # bounded: forget them all, keep this one
                    cache = self._contrib = (norm, {tid: found}, [len(found[0])])
                    known, size = cache[1], cache[2]
            slots, contrib = found
            if len(slots):
                scores[slots] += contrib if count == 1 else contrib * np.float32(count)
        return scores

    def _term_contrib(
        self, tid: int, norm: NDArray[np.float32]
    ) -> tuple[NDArray[np.int32], NDArray[np.float32]]:
        """A term's postings and what each adds to its slot's BM25 (0 for dead slots), for the
        index as it is now (:meth:`bm25` forgets them at the next write)."""
        slots, tf = self._postings(tid)
        if not len(slots):
            return slots, tf
        if self.n_alive == self.n:  # no dead slot: every posting counts
            live = None
            df = len(slots)
        else:
            live = self.alive[slots]
            df = int(np.count_nonzero(live))
            if not df:
                return slots[:0], tf[:0]
        idf = np.float32(np.log(1.0 + (float(self.n_alive) - df + 0.5) / (df + 0.5)))
        contrib = idf * tf * np.float32(K1 + 1) / (tf + norm[slots])
        if live is not None and df != len(slots):
            contrib *= live
        return slots, contrib

    def unit_query(self, query_vector: Any) -> NDArray[np.float32] | None:
        """The query as the unit float32 vector every cosine is computed with; ``None`` when the
        index holds no vectors or the query is zero / not finite / of another size."""
        if not self.dim or not self.n:
            return None
        return vecq.unit(query_vector, self.dim)

    def positions(self, slots: Sequence[int], terms: Sequence[str]) -> list[TermMatches]:
        """For each slot, the occurrences of those of ``terms`` it contains, a mapping
        ``{term: [i, ...]}`` that also carries the overlap reranker's features, computed for
        all the slots at once (:class:`goclaw_search.rerank.TermMatches`)."""
        asked = list(dict.fromkeys(terms))
        ids = {t: tid for t in asked if (tid := self.term_id(t)) is not None}
        return self.fwd.matches(asked, list(ids), list(ids.values()), slots)

    def ids_of(self, slots: NDArray[np.int64]) -> list[int]:
        return [int(i) for i in self.ids[slots]]
