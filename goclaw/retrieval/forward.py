"""A forward index: each slot's term ids in document order (issue 11, the reranker's input).

:class:`goclaw.retrieval.index.SearchIndex` answers "which documents hold this term" (postings);
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
        none = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        if not len(slots) or not len(term_ids):
            return none
        at = np.asarray(slots, dtype=np.int64)
        starts, ends = self.ptr[at], self.ptr[at + 1]
        lens = ends - starts
        total = int(lens.sum())
        if not total:
            return none
        owner = np.repeat(np.arange(len(at)), lens)
        offset = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
        seq = self.terms[starts[owner] + offset]
        ids = np.asarray(term_ids, dtype=np.int32)
        hit = np.flatnonzero(np.isin(seq, ids))
        seq = seq[hit]
        code = np.zeros(len(hit), dtype=np.int64)
        for c in range(1, len(ids)):  # the index of each occurrence's term (a few terms)
            code[seq == ids[c]] = c
        return owner[hit], code, offset[hit]

    def arrays(self) -> dict[str, Any]:
        """What :meth:`from_arrays` reads back (for saving)."""
        self._join()
        return {"fwd_terms": self.terms, "fwd_ptr": self.ptr}

    @classmethod
    def from_arrays(cls, terms: Any, ptr: Any) -> ForwardIndex:
        fwd = cls()
        fwd.terms, fwd.ptr = terms, ptr
        return fwd
