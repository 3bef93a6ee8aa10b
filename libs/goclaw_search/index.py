"""An in-memory search index: BM25 postings and a cosine matrix over the same slots.

One :class:`SearchIndex` holds one collection (for memory: one agent's chunks, every user
scope). Each document occupies a *slot*; the lexical channel (BM25 over
:mod:`goclaw_search.tokenize` terms) and the vector channel (a row-normalised float32 matrix)
are aligned on those slots, so a query scores **every** document on both channels with a few
numpy operations and the fusion is exact: no candidate that one channel missed is ever scored 0
for lack of a lookup (the bug of the first memory search).

* Postings are term-major arrays ``(slots, tf)``: a base CSR built in bulk, plus per-term
  appended lists for documents added since (materialised on first use, merged on save).
* Removal marks a slot dead; document frequencies, ``N`` and the mean length count live slots
  only, so BM25 is exact at every moment. :meth:`compact` drops dead slots when they pile up.
* BM25: k1 = 1.2, b = 0.75, IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (Lucene's, never
  negative; GoClaw's skill formula).
* The vector channel keeps, beside the float32 rows, an int8 copy of each row with its scale
  and error bound (:mod:`goclaw_search.vecq`): :meth:`fuse` scans the int8 copy for bounds
  and rescores exactly only the slots that can reach the result, which is the result of the
  exact cosines of every slot (:func:`goclaw_search.fusion.fuse_bounded`).
* :meth:`save` / :meth:`load` persist everything in one folder (written atomically), so a
  100k-chunk index is ready in a fraction of a second after a restart.

The class is split by what its parts do, :class:`SearchIndex` combining them:

* :mod:`goclaw_search.index_build`: :class:`Doc`, :class:`Vocab` and the vectorised passes
  of a write (postings from term ids, vectors normalised in place);
* :mod:`goclaw_search.index_slots`: the state, every attribute set in one ``__init__``;
* :mod:`goclaw_search.index_write`: removal, vectors, locations, postings merge, compaction;
* :mod:`goclaw_search.index_read`: scope masks, BM25, positions, ids and locations;
* here: :meth:`SearchIndex.upsert`, :meth:`SearchIndex.cosine`, :meth:`SearchIndex.fuse`,
  save / load, and the machine-dependent choices they make (vectors set on a second thread,
  BLAS threads per product, the dense / int8 threshold), read from this module's
  :data:`SIDE_AT`, :func:`_machine_idle` and :data:`DENSE_BELOW` (patch them here).

Every name this module held before that split is still imported from here (re-exported).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from goclaw_search import vecq
from goclaw_search.fusion import TEXT_WEIGHT, VECTOR_WEIGHT, Fused, fuse_bounded, fuse_lists
from goclaw_search.index_build import Doc, _global_ids, _postings
from goclaw_search.index_build import Vocab as Vocab  # re-exported, as each `X as X` here
from goclaw_search.index_build import _has_norm as _has_norm
from goclaw_search.index_build import _normalise_rows as _normalise_rows
from goclaw_search.index_read import CONTRIB_CACHE as CONTRIB_CACHE
from goclaw_search.index_read import K1 as K1
from goclaw_search.index_read import B as B
from goclaw_search.index_read import IndexReads
from goclaw_search.index_write import IndexWrites
from goclaw_search.persist import FORMAT as FORMAT  # re-exported: imported from here
from goclaw_search.persist import load_index, save_index
from goclaw_search.sysload import runnable

if TYPE_CHECKING:
    from numpy.typing import NDArray

# Below this many slots the vector channel computes every slot's exact cosine (one pass, no
# bounds); above it the int8 scan and the exact rescoring of the few slots near the cut are
# faster (measured: docs/memory.md "The vector channel").
DENSE_BELOW = 768
_controller: Any = None


# Documents in one upsert from which their vectors are set (copied, normalised, quantized) on
# a second thread while this one builds the postings, when the machine is otherwise idle: both
# run mostly without the GIL (numpy, scipy's postings count, the vector kernels).
SIDE_AT = 20_000


class _Side:
    """``fn(*args)`` on another thread; :meth:`join` waits for it and raises what it raised."""

    def __init__(self, fn: Callable[..., None], *args: Any) -> None:
        self._error: BaseException | None = None

        def run() -> None:
            try:
                fn(*args)
            except BaseException as exc:  # handed to the caller's thread by join
                self._error = exc

        self._thread = threading.Thread(target=run, name="goclaw-index-vectors")
        self._thread.start()

    def join(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error


def _machine_idle() -> bool:
    """Whether nothing but this process is runnable right now (``False`` where that cannot be
    read: :func:`goclaw_search.sysload.runnable`)."""
    running = runnable()
    return running is not None and running <= 1


def _blas_threads() -> Any:
    """BLAS threads for one matrix-vector product: all of them when the machine is otherwise
    idle (two threads halve a 10k x 256 product, 0.38 -> 0.18 ms), one as soon as anything else
    is runnable: a product memory-bound on busy cores turns BLAS's spinning threads into a
    ~10 ms tail (p90 at 10k x 256 with one busy process on 2 cores: 12 ms with two threads,
    0.44 ms with one; benchmarks/README.md)."""
    global _controller
    if _machine_idle():
        return contextlib.nullcontext()
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()
        except Exception:  # pragma: no cover - threadpoolctl is a dependency
            _controller = False
    if not _controller:
        return contextlib.nullcontext()
    return _one_blas_thread()


_blas_lock = threading.Lock()
_blas_users = 0  # products under way with BLAS limited to one thread
_blas_limit: Any = None


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """BLAS limited to one thread while any search's product needs it (the limit is process-wide:
    the first in sets it, the last out restores the original)."""
    global _blas_users, _blas_limit
    with _blas_lock:
        if not _blas_users:
            _blas_limit = _controller.limit(limits=1, user_api="blas")
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if not _blas_users:
                _blas_limit.restore_original_limits()
                _blas_limit = None


class SearchIndex(IndexWrites, IndexReads):
    """Slots with BM25 postings and an aligned vector matrix (see the module docstring)."""

    # ------------------------------------------------------------------ writes
    def upsert(self, docs: Iterable[Doc]) -> None:
        """Add documents (an id already present is replaced). Vectorised: one segment of
        postings per call, whatever the number of documents."""
        docs = list({d.id: d for d in docs}.values())  # the last copy of an id wins
        if not docs:
            return
        self.remove([d.id for d in docs if d.id in self.slot_of])
        first = self.n
        count = len(docs)
        self._grow(first + count)
        end = first + count
        self.ids[first:end] = [d.id for d in docs]
        scopes = self.scopes
        self.scope[first:end] = [scopes.setdefault(d.scope, len(scopes)) for d in docs]
        self.fp[first:end] = [d.fingerprint for d in docs]
        self.loc_path[first:end] = [self._path_code(d.path) for d in docs]
        self.loc_start[first:end] = [d.start_line for d in docs]
        self.loc_end[first:end] = [d.end_line for d in docs]
        lens = np.fromiter((len(d.terms) for d in docs), dtype=np.int64, count=count)
        self.dl[first:end] = lens
        self.alive[first:end] = True
        self.slot_of.update(zip((d.id for d in docs), range(first, end), strict=True))
        self.n = end
        self.n_alive += count
        self.total_len += float(lens.sum())
        # One pass: each occurrence to its term id, new terms numbered as first seen.
        given = _global_ids([d.terms for d in docs])
        if given is not None:  # the tokenizer's ids (Tokenizer.batch): no string per occurrence
            tids = self._local_ids(*given)
        else:
            with self.vocab.numbering():
                tids = np.fromiter(
                    map(self.vocab.__getitem__, itertools.chain.from_iterable(d.terms for d in docs)),
                    dtype=np.int64,
                    count=int(lens.sum()),
                )
        side = None
        if self.dim:
            with_vec = [(i, d.vector) for i, d in enumerate(docs) if d.vector is not None]
            if with_vec and count >= SIDE_AT and _machine_idle():
                side = _Side(self._set_vectors, first, end, with_vec)  # beside the postings
            elif with_vec:
                self._set_vectors(first, end, with_vec)
        try:
            self.fwd.append(tids, lens)
            self.psk.append([d.sketch for d in docs])
            if len(tids):
                self._segments.append(_postings(tids, lens, first, len(self.vocab)))
                self._merged.clear()
                if len(self._segments) > 8:
                    self._consolidate()
        finally:
            if side is not None:
                side.join()  # raises what setting the vectors raised
        self._norm = None

    # ------------------------------------------------------------------ scoring
    def cosine(self, query_vector: Any) -> NDArray[np.float32] | None:
        """Cosine similarity of every slot to the query (0 for slots without a vector), by the
        float32 BLAS product (within ~1e-7 of :meth:`fuse`'s exact cosines); ``None`` as for
        :meth:`unit_query`."""
        q = self.unit_query(query_vector)
        if q is None:
            return None
        with _blas_threads():
            sims: NDArray[np.float32] = self.vec[: self.n] @ q
        return sims

    def fuse(
        self,
        lexical: NDArray[np.float32] | None,
        query: NDArray[np.float32] | None,
        mask: NDArray[np.bool_] | None,
        *,
        limit: int,
        method: str = "weighted",
        text_weight: float = TEXT_WEIGHT,
        vector_weight: float = VECTOR_WEIGHT,
        boost: NDArray[np.float32] | None = None,
        pool: int | None = None,
        scan: str | None = None,
    ) -> Fused:
        """:func:`goclaw_search.fusion.fuse_lists` of the lexical scores and the exact cosines
        of every slot to ``query`` (a :meth:`unit_query`; ``None``: no vector channel), found
        without computing them all: the int8 scan bounds each slot's cosine and only the slots
        that can reach the result are rescored (:func:`goclaw_search.fusion.fuse_bounded`).
        ``scan``: ``"int8"`` (the compiled scan), ``"blas"`` (the float32 product's bounds: the
        path without the compiled module) or ``"dense"`` (every exact cosine); by default
        ``"dense"`` below :data:`DENSE_BELOW` slots, else ``"int8"`` (``"blas"`` without the
        compiled module). The
        result is the same whichever runs."""
        args: dict[str, Any] = dict(limit=limit, method=method, boost=boost, pool=pool)
        args.update(text_weight=text_weight, vector_weight=vector_weight)
        n = self.n
        self.rescored = 0
        if query is None or not self.dim or not n:
            return fuse_lists(lexical, None, mask, **args)
        if scan is None:
            scan = "blas" if vecq.compiled is None else "dense" if n < DENSE_BELOW else "int8"
        vec = self.vec[:n]
        if scan == "dense":
            self.rescored = n
            return fuse_lists(lexical, vecq.exact(vec, query), mask, **args)
        if scan == "int8" and method == "weighted" and vecq.FUSE_IN_SCAN:
            q8, q8s, q8e, q8n = self.q8[:n], self.q8s[:n], self.q8e[:n], self.q8n[:n]
            got = vecq.fuse_scan(
                q8, q8s, q8e, q8n, self.q8mu, vec, query, lexical, mask, boost,
                limit=limit, text_weight=text_weight, vector_weight=vector_weight,
            )  # fmt: skip
            if got is not None:  # else the two-pass path below settles it
                self.rescored = got.rescored
                return Fused(got.slots, got.scores, got.lexical, got.vector)
        if scan == "int8":
            q = vecq.prepare(query)
            lo, hi = vecq.scan(self.q8[:n], self.q8s[:n], self.q8e[:n], self.q8n[:n], self.q8mu, q)
        else:
            with _blas_threads():
                lo, hi = vecq.blas_bounds(vec, query)
        fused, self.rescored = fuse_bounded(
            lexical, lo, hi, lambda slots: vecq.exact(vec, query, slots), mask, **args
        )
        return fused

    # ------------------------------------------------------------------ persistence
    def save(self, path: Path) -> None:
        """Write the whole index to the folder ``path``, atomically (one ``.npy`` per array,
        memory-mapped on load); see :func:`goclaw_search.persist.save_index`."""
        save_index(self, path)

    @classmethod
    def load(cls, path: Path) -> SearchIndex:
        """Read an index written by :meth:`save` (raises ``ValueError`` if it is not one);
        see :func:`goclaw_search.persist.load_index`."""
        return load_index(cls, path)
