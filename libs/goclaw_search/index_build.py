"""The building blocks of a :class:`goclaw_search.index.SearchIndex`: the
documents it takes (:class:`Doc`), its term numbering (:class:`Vocab`), and the vectorised
passes of a write: postings counted from term ids (:func:`_postings`), a batch's tokenizer ids
in one array (:func:`_global_ids`), vectors normalised in place (:func:`_normalise_rows`).
Plain functions over numpy arrays (scipy.sparse for a large write's postings)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from goclaw_search import tokenize, vecq

if TYPE_CHECKING:
    from numpy.typing import NDArray


SCIPY_FROM = 2_000_000  # term occurrences in one write from which scipy counts the postings


def prefetch_bulk() -> None:
    """Import what a large write needs (scipy's sparse arrays, ~0.6 s) on a daemon thread, so
    a caller about to load many documents overlaps the import with its other work (reading,
    tokenizing, the database's writes) instead of paying it inside the index build. Cheap
    and harmless when scipy is already imported: the thread finds it in ``sys.modules``;
    nothing to do where the compiled module counts the postings (no scipy)."""
    import sys
    import threading

    if _compiled_postings() is None and "scipy.sparse" not in sys.modules:
        threading.Thread(target=_import_sparse, name="goclaw-prefetch", daemon=True).start()


def _compiled_postings() -> Any:
    """The compiled module when it has the postings' counting sort (``postings``), else None."""
    kernels = vecq.compiled
    return kernels if kernels is not None and hasattr(kernels, "postings") else None


def _import_sparse() -> None:
    with contextlib.suppress(ImportError):
        import scipy.sparse  # noqa: F401


def _counted(keys: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """``numpy.unique(keys, return_counts=True)`` by one sort, in place (``keys`` is the
    caller's temporary)."""
    keys.sort()
    first = np.empty(len(keys), dtype=np.bool_)
    first[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    at = np.flatnonzero(first)
    counts = np.empty(len(at), dtype=np.int64)
    np.subtract(at[1:], at[:-1], out=counts[:-1])
    counts[-1:] = len(keys) - at[-1:]
    return keys[at], counts


def _postings(
    tids: NDArray[np.int32] | NDArray[np.int64], lens: NDArray[np.int64], first: int, n_terms: int
) -> tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.float32]]:
    """The postings of documents ``first``, ``first + 1``, ... (``lens``: their term counts,
    ``tids``: their terms in order): ``(term, slot, tf)`` arrays term-major, slots ascending.
    A large write: a term x document count matrix from its occurrences, COO to CSR (scipy's
    counting sort, which keeps each term's documents in order and adds up the repeats); a
    smaller one (below :data:`SCIPY_FROM` occurrences, a typical run: no scipy import, ~0.3 s)
    by one numpy sort of ``term x documents + slot`` keys; a large write where the compiled
    module is built by its ``postings`` loop (the same counting sort). The same arrays either
    way."""
    n_docs = len(lens)
    if len(tids) < SCIPY_FROM:
        owner = np.repeat(np.arange(first, first + n_docs, dtype=np.int64), lens)
        stride = np.int64(max(first + n_docs, 1))
        pairs, tf = _counted(tids.astype(np.int64) * stride + owner)  # term-major, then slot
        terms, slots_of = np.divmod(pairs, stride)
        return terms, slots_of.astype(np.int32), tf.astype(np.float32)
    kernels = _compiled_postings()
    if kernels is not None:  # the same counting sort, one loop
        tids = np.ascontiguousarray(tids, dtype=np.int64)
        return kernels.postings(tids, np.ascontiguousarray(lens, dtype=np.int64), first, n_terms)
    from scipy.sparse import coo_array

    owner = np.repeat(np.arange(n_docs, dtype=np.int32 if n_docs < 2**31 else np.int64), lens)
    ones = np.ones(len(owner), dtype=np.float32)
    counts = coo_array((ones, (tids, owner)), shape=(n_terms, max(n_docs, 1))).tocsr()
    terms = np.repeat(np.arange(n_terms, dtype=np.int64), np.diff(counts.indptr))
    slots = counts.indices.astype(np.int32)
    slots += np.int32(first)
    return terms, slots, counts.data.astype(np.float32, copy=False)


class Vocab(dict[str, int]):
    """Term -> term id (ids are the insertion order: ``list(vocab)[tid]`` is the term).

    Inside :meth:`numbering`, reading a term that is not there with ``[]`` numbers it (the next
    id), so one C-speed pass over a bulk load's term occurrences maps them to ids and numbers the
    new terms in order of first sight. Outside it an unknown term raises ``KeyError`` like any
    dict: a read can never grow the vocabulary by accident."""

    _numbering = False

    def __missing__(self, term: str) -> int:
        if not self._numbering:
            raise KeyError(term)
        tid = self[term] = len(self)
        return tid

    @contextlib.contextmanager
    def numbering(self) -> Iterator[None]:
        """Unknown terms read with ``[]`` are added while this is open (one writer at a time:
        the index's own lock)."""
        self._numbering = True
        try:
            yield
        finally:
            self._numbering = False


def _normalise_rows(block: NDArray[np.float32], step: int = 4096) -> NDArray[np.bool_]:
    """Divide each row of ``block`` by its norm in place (rows of norm 0 stay 0; a row with a
    NaN or an infinity, whose norm is not finite, becomes 0: no vector, see :func:`_has_norm`);
    returns which rows had a norm. ``numpy.linalg.norm`` per band of rows: the same arithmetic
    per row as over the whole block, without two block-sized temporaries."""
    ok = np.empty(len(block), dtype=np.bool_)
    for lo in range(0, len(block), step):
        band = block[lo : lo + step]
        norms = np.linalg.norm(band, axis=1)
        good = _has_norm(norms)
        ok[lo : lo + step] = good
        np.divide(band, np.where(good, norms, np.float32(1))[:, None], out=band)
        if not good.all():
            band[~good] = 0.0
    return ok


def _has_norm(norms: Any) -> Any:
    """Whether vectors of these norms are vectors: a positive, finite norm. A vector with a NaN
    or an infinity is stored as no vector (a zero row, cosine exactly 0): a NaN row would make
    the exact fusion drop the whole vector channel while the int8 scan ranks the other rows
    (different results by the index's size), and no cosine with it means anything."""
    return np.isfinite(norms) & (norms > 0)


def _global_ids(seqs: Sequence[Sequence[str]]) -> tuple[NDArray[np.int32], list[str]] | None:
    """The global term ids of every sequence, in order, when all are :class:`tokenize.TermIds`
    of one table (else ``None``): consecutive ones of one batch are one slice of its array."""
    if not seqs or type(seqs[0]) is not tokenize.TermIds:
        return None
    table = seqs[0].table
    parts: list[NDArray[np.int32]] = []
    base: Any = None
    lo = hi = 0
    for s in seqs:
        if type(s) is not tokenize.TermIds or s.table is not table:
            return None
        if s.base is base and s.lo == hi:
            hi = s.hi
            continue
        if base is not None:
            parts.append(base[lo:hi])
        base, lo, hi = s.base, s.lo, s.hi
    parts.append(base[lo:hi])
    return (parts[0] if len(parts) == 1 else np.concatenate(parts)), table


class Doc(NamedTuple):
    """One document to index: its id, scope (e.g. user id, ``""`` = shared), terms, optional
    vector, a fingerprint (anything that changes when the document does) and an optional
    passage sketch (:mod:`goclaw_search.passage_sketches`). A named tuple: a bulk load
    makes one per chunk (4x cheaper than a frozen dataclass)."""

    id: int
    scope: str
    terms: Sequence[str]
    vector: Any = None
    fingerprint: int = 0
    sketch: Any = None
    # Where the document is (memory: the chunk's file and lines), kept per slot so a search
    # builds its hits without reading the rows (:meth:`SearchIndex.location`).
    path: str = ""
    start_line: int = 0
    end_line: int = 0
