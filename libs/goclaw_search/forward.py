"""A forward index: each slot's term ids in document order (the reranker's input).

:class:`goclaw_search.index.SearchIndex` answers "which documents hold this term" (postings);
this answers "where in this document are the query's terms", which term proximity needs. With
it a reranker reads the positions of the query terms in its candidates with a few numpy
operations instead of fetching and tokenising their text (about 4 bytes per term of the
collection; memory-mapped from disk like the rest of the index).

Slots are appended in order, as the search index assigns them; appends are kept as parts and
joined on the first read after them, so a stream of small writes never copies the whole array
each time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from goclaw_search.rerank import TermMatches, match_batch

if TYPE_CHECKING:
    from numpy.typing import NDArray


class ForwardIndex:
    """Term ids of every slot, in order: slot ``s`` is ``terms[ptr[s]:ptr[s + 1]]``."""

    def __init__(self) -> None:
        self.terms: NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self.ptr: NDArray[np.int64] = np.zeros(1, dtype=np.int64)
        self._parts: list[tuple[NDArray[np.int32], NDArray[np.int64]]] = []

    @property
    def slots(self) -> int:
        """How many slots it holds (appended parts included)."""
        return len(self.ptr) - 1 + sum(len(lens) for _t, lens in self._parts)

    def append(self, term_ids: NDArray[np.int64] | Sequence[int], lengths: NDArray[np.int64]) -> None:
        """Add the next ``len(lengths)`` slots: their term ids, concatenated in slot order."""
        self._parts.append((np.asarray(term_ids, dtype=np.int32), np.asarray(lengths, dtype=np.int64)))

    def _join(self) -> None:
        if not self._parts:
            return
        lens = np.concatenate([lens for _t, lens in self._parts])
        ends = self.ptr[-1] + np.cumsum(lens)
        self.terms = np.concatenate([self.terms, *(t for t, _l in self._parts)])
        self.ptr = np.concatenate([self.ptr, ends])
        self._parts.clear()

    def keep(self, live: NDArray[np.int64]) -> None:
        """Keep only the slots ``live`` (sorted), renumbered 0..len(live)-1."""
        self._join()
        lens = np.diff(self.ptr)
        kept = np.zeros(len(lens), dtype=np.bool_)
        kept[live] = True
        self.terms = self.terms[np.repeat(kept, lens)]
        self.ptr = np.zeros(len(live) + 1, dtype=np.int64)
        np.cumsum(lens[live], out=self.ptr[1:])

    def occurrences(
        self, slots: Sequence[int], term_ids: Sequence[int]
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
        """Every occurrence of the given (distinct) terms in the given slots, as three arrays:
        the index in ``slots`` of its slot (ascending), the index in ``term_ids`` of its term,
        its position (ascending per slot)."""
        self._join()
        return _occurrences(self.terms, self.ptr, slots, term_ids)

    def matches(
        self, asked: Sequence[str], known: Sequence[str], term_ids: Sequence[int], slots: Sequence[int]
    ) -> list[TermMatches]:
        """For each slot, its occurrences of the query terms ``asked`` as a
        :class:`goclaw_search.rerank.TermMatches` (``known``: those of them in the index,
        ``term_ids`` their ids), with the overlap reranker's features computed for all the slots
        at once in numpy."""
        self._join()
        at = np.asarray(slots, dtype=np.int64)
        owner, codes, pos = _occurrences(self.terms, self.ptr, at, np.asarray(term_ids, dtype=np.int64))
        return match_batch(asked, known, len(at), owner, codes, pos)

    def arrays(self) -> dict[str, Any]:
        """What :meth:`from_arrays` reads back (for saving)."""
        self._join()
        return {"fwd_terms": self.terms, "fwd_ptr": self.ptr}

    @classmethod
    def from_arrays(cls, terms: Any, ptr: Any) -> ForwardIndex:
        fwd = cls()
        fwd.terms, fwd.ptr = terms, ptr
        return fwd


def _occurrences(
    terms: NDArray[np.int32],
    ptr: NDArray[np.int64],
    slots: Sequence[int] | NDArray[np.int64],
    term_ids: Sequence[int] | NDArray[np.int64],
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """:meth:`ForwardIndex.occurrences` on these arrays."""
    none = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    if not len(slots) or not len(term_ids):
        return none
    at = np.asarray(slots, dtype=np.int64)
    starts, ends = ptr[at].tolist(), ptr[at + 1].tolist()
    # The slots' terms one after the other (a slice each: fewer passes than an index array).
    seq = np.concatenate([terms[a:b] for a, b in zip(starts, ends, strict=True)])
    if not len(seq):
        return none
    ids = [int(t) for t in term_ids]
    found = seq == ids[0]
    for t in ids[1:]:  # a few query terms: one comparison pass each beats a set look-up
        found |= seq == t
    hit = np.flatnonzero(found)
    seq = seq[hit]
    code = np.zeros(len(hit), dtype=np.int64)
    for c in range(1, len(ids)):  # the index of each occurrence's term
        code[seq == ids[c]] = c
    lens = np.subtract(ends, starts)
    first = np.cumsum(lens)  # where each slot's terms end in ``seq``
    owner = np.searchsorted(first, hit, side="right")
    first -= lens
    return owner.astype(np.int64), code, hit - first[owner]
