"""Scores kept in a dense array, one slot per chunk (the postgresql memory backend scores every
chunk of an agent that holds a query term this way), and the array's best slots.

The compiled versions (``_vec.scatter_add`` / ``_vec.top_positive``, Cython) give the same
results as the numpy ones here, bit for bit; they run when the compiled module is built and
``GOCLAW_SEARCH_NUMPY`` is not ``1``. At 100,000 slots the compiled top-m is one pass with a
bounded heap, where numpy partitions every nonzero slot.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from goclaw_search.vecq import compiled

__all__ = ["scatter_add", "top_positive"]


def scatter_add(
    out: NDArray[np.float64], ords: NDArray[np.int32], factor: NDArray[np.float64], w: float
) -> None:
    """``out[ords[i]] += w * factor[i]`` for every i; each ordinal at most once in ``ords``
    (IndexError, nothing added, for an ordinal outside ``out``)."""
    if compiled is not None:
        compiled.scatter_add(out, ords, factor, float(w))
        return
    if len(ords) and (int(ords.min()) < 0 or int(ords.max()) >= len(out)):
        raise IndexError("an ordinal lies outside the score array")
    out[ords] += w * factor


def top_positive(score: NDArray[np.float64], m: int) -> NDArray[np.int64]:
    """The indexes of the ``m`` best entries above zero, best first, ties by the lower index."""
    if compiled is not None:
        found: NDArray[np.int64] = compiled.top_positive(score, int(m))
        return found
    if m <= 0:
        return np.zeros(0, dtype=np.int64)
    hit = np.flatnonzero(score > 0)
    if len(hit) > m:
        # Keep the m best, and every slot tied with the m-th, so ties resolve by index below.
        cut = np.partition(score[hit], len(hit) - m)[len(hit) - m]
        hit = hit[score[hit] >= cut]
    order = np.lexsort((hit, -score[hit]))[:m]
    return hit[order].astype(np.int64)
