"""An in-memory search index: BM25 postings and a cosine matrix over the same slots (issue 11).

One :class:`SearchIndex` holds one collection (for memory: one agent's chunks, every user
scope). Each document occupies a *slot*; the lexical channel (BM25 over
:mod:`goclaw.retrieval.tokenize` terms) and the vector channel (a row-normalised float32 matrix)
are aligned on those slots, so a query scores **every** document on both channels with a few
numpy operations and the fusion is exact: no candidate that one channel missed is ever scored 0
for lack of a lookup (the bug of the first memory search).

* Postings are term-major arrays ``(slots, tf)``: a base CSR built in bulk, plus per-term
  appended lists for documents added since (materialised on first use, merged on save).
* Removal marks a slot dead; document frequencies, ``N`` and the mean length count live slots
  only, so BM25 is exact at every moment. :meth:`compact` drops dead slots when they pile up.
* BM25: k1 = 1.2, b = 0.75, IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (Lucene's, never
  negative; the spec's skill formula).
* The vector channel keeps, beside the float32 rows, an int8 copy of each row with its scale
  and error bound (:mod:`goclaw.retrieval.vecq`): :meth:`fuse` scans the int8 copy for bounds
  and rescores exactly only the slots that can reach the result, which is the result of the
  exact cosines of every slot (:func:`goclaw.retrieval.fusion.fuse_bounded`).
* :meth:`save` / :meth:`load` persist everything in one folder (written atomically), so a
  100k-chunk index is ready in a fraction of a second after a restart.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from goclaw.retrieval import tokenize, vecq
from goclaw.retrieval.forward import ForwardIndex
from goclaw.retrieval.fusion import Fused, fuse_bounded, fuse_lists
from goclaw.retrieval.passage_sketches import PassageSketches
from goclaw.retrieval.persist import ARRAYS, load_index, save_index
from goclaw.retrieval.persist import FORMAT as FORMAT  # re-exported: imported from here
from goclaw.retrieval.rerank import TermMatches
from goclaw.sysload import runnable

if TYPE_CHECKING:
    from numpy.typing import NDArray

K1 = 1.2
B = 0.75
# Below this many slots the vector channel computes every slot's exact cosine (one pass, no
# bounds); above it the int8 scan and the exact rescoring of the few slots near the cut are
# faster (measured: docs/memory.md "The vector channel").
DENSE_BELOW = 768
# BM25 contributions remembered per index (postings across terms): ~12 bytes each at most
CONTRIB_CACHE = 2_000_000
_controller: Any = None


# Documents in one upsert from which their vectors are set (copied, normalised, quantized) on
# a second thread while this one builds the postings, when the machine is otherwise idle: both
# run mostly without the GIL (numpy, goclaw/retrieval/_vec.c and _accel.c's postings).
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
    read: :func:`goclaw.sysload.runnable`)."""
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


def _counted(keys: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """``numpy.unique(keys, return_counts=True)`` by one sort, in place (``keys`` is the
    caller's temporary; numpy's own was ~4x slower on the millions of keys of a bulk load)."""
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
    ``tids``: their terms in order): ``(term, slot, tf)`` arrays term-major, slots ascending."""
    if tokenize.accel is not None:  # a counting sort in C: the same arrays
        raw = tokenize.accel.postings(np.ascontiguousarray(tids, dtype=np.int32), lens, first, n_terms)
        return (
            np.frombuffer(raw[0], dtype=np.int64),
            np.frombuffer(raw[1], dtype=np.int32),
            np.frombuffer(raw[2], dtype=np.float32),
        )
    owner = np.repeat(np.arange(first, first + len(lens), dtype=np.int64), lens)
    stride = np.int64(max(first + len(lens), 1))
    pairs, tf = _counted(tids.astype(np.int64) * stride + owner)  # term-major, then slot
    terms, slots_of = np.divmod(pairs, stride)
    return terms, slots_of.astype(np.int32), tf.astype(np.float32)


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
    passage sketch (:mod:`goclaw.retrieval.passage_sketches`). A named tuple: a bulk load
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


class SearchIndex:
    """Slots with BM25 postings and an aligned vector matrix (see the module docstring)."""

    def __init__(self, dim: int | None = None, *, meta: dict[str, Any] | None = None) -> None:
        self.dim = int(dim) if dim else 0
        self.meta: dict[str, Any] = dict(meta or {})
        self.vocab: Vocab = Vocab()
        self.scopes: dict[str, int] = {}
        self.slot_of: dict[int, int] = {}
        self.n = 0  # slots used (live and dead)
        cap = 64
        self.ids = np.zeros(cap, dtype=np.int64)
        self.scope = np.zeros(cap, dtype=np.int32)
        self.dl = np.zeros(cap, dtype=np.float32)
        self.alive = np.zeros(cap, dtype=np.bool_)
        self.fp = np.zeros(cap, dtype=np.int64)
        self.vec = np.zeros((cap, self.dim), dtype=np.float32)
        self.has_vec = np.zeros(cap, dtype=np.bool_)
        # Each slot's location: its path's code in ``paths`` (interned: one string per path,
        # ~12 bytes a slot in all), start and end line. ``located`` is False for an index
        # loaded from a format before 6 until :meth:`set_locations` fills them (codes -1).
        self.paths: list[str] = []
        self._path_codes: dict[str, int] = {}
        self.loc_path = np.zeros(cap, dtype=np.int32)
        self.loc_start = np.zeros(cap, dtype=np.int32)
        self.loc_end = np.zeros(cap, dtype=np.int32)
        self.located = True
        # The int8 copy of each row about the centre ``q8mu``, its scale, error and norm
        # (goclaw.retrieval.vecq), kept in step with ``vec`` by every write.
        self.q8 = np.zeros((cap, self.dim), dtype=np.int8)
        self.q8s = np.zeros(cap, dtype=np.float32)
        self.q8e = np.zeros(cap, dtype=np.float32)
        self.q8n = np.zeros(cap, dtype=np.float32)
        self.q8mu = np.zeros(self.dim, dtype=np.float32)
        self.rescored = 0  # slots the last :meth:`fuse` rescored exactly (for measurement)
        self.n_alive = 0
        self.total_len = 0.0
        self._indptr = np.zeros(1, dtype=np.int64)
        self._slots = np.zeros(0, dtype=np.int32)
        self._tf = np.zeros(0, dtype=np.float32)
        # Postings added since the base CSR: segments of (term, slot, tf) sorted by term.
        self._segments: list[tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.float32]]] = []
        self._merged: dict[int, tuple[NDArray[np.int32], NDArray[np.float32]]] = {}
        self._norm: NDArray[np.float32] | None = None
        # Each query term's postings and BM25 contributions, for the ``_norm`` they were
        # computed with (a write replaces ``_norm``, so a stale entry is never read).
        self._contrib: tuple[Any, dict[int, tuple[NDArray[np.int32], NDArray[np.float32]]], list[int]] = (
            None,
            {},
            [0],
        )
        self.fwd = ForwardIndex()  # each slot's term ids in order (term positions)
        self._gtable: list[str] | None = None  # a tokenizer table's terms (:meth:`_local_ids`)
        self._gmap = np.full(0, -1, dtype=np.int64)
        self.psk = PassageSketches()  # each slot's passage sketch, if any (the passage step)

    # ------------------------------------------------------------------ size
    def __len__(self) -> int:
        return self.n_alive

    def _grow(self, need: int) -> None:
        cap = len(self.ids)
        if need <= cap:
            return
        new = max(need, cap + cap // 2 + 64)

        def _g(a: Any) -> Any:
            out = np.zeros((new, *a.shape[1:]), dtype=a.dtype)
            out[: self.n] = a[: self.n]
            return out

        self.ids, self.scope, self.dl = _g(self.ids), _g(self.scope), _g(self.dl)
        self.alive, self.fp, self.vec, self.has_vec = (
            _g(self.alive),
            _g(self.fp),
            _g(self.vec),
            _g(self.has_vec),
        )
        self.q8, self.q8s, self.q8e, self.q8n = _g(self.q8), _g(self.q8s), _g(self.q8e), _g(self.q8n)
        self.loc_path, self.loc_start, self.loc_end = _g(self.loc_path), _g(self.loc_start), _g(self.loc_end)

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
                if tokenize.accel is not None:  # the same pass in C (goclaw/retrieval/_accel.c)
                    raw = tokenize.accel.term_ids(self.vocab, [d.terms for d in docs], int(lens.sum()))
                    tids = np.frombuffer(raw, dtype=np.int64)
                else:
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

    def _set_vectors(self, first: int, end: int, with_vec: list[tuple[int, Any]]) -> None:
        self._set_new_vectors(first, end, with_vec)
        self._quantize(first, end)

    def _path_code(self, path: str) -> int:
        code = self._path_codes.get(path)
        if code is None:
            if len(self._path_codes) != len(self.paths):  # loaded: the table only
                self._path_codes = {p: i for i, p in enumerate(self.paths)}
                return self._path_code(path)
            code = self._path_codes[path] = len(self.paths)
            self.paths.append(path)
        return code

    def location(self, slot: int) -> tuple[str, int, int] | None:
        """The slot's ``(path, start line, end line)``; ``None`` when not known (a document
        of an index saved before format 6 that :meth:`set_locations` has not filled)."""
        code = int(self.loc_path[slot])
        if code < 0:
            return None
        return self.paths[code], int(self.loc_start[slot]), int(self.loc_end[slot])

    def set_locations(self, rows: Iterable[tuple[int, str, int, int]]) -> None:
        """Give documents (by id) their ``(id, path, start line, end line)``; unknown ids are
        ignored. ``located`` is then True when every live slot has one."""
        get = self.slot_of.get
        for i, path, start, end in rows:
            slot = get(int(i))
            if slot is not None:
                self.loc_path[slot] = self._path_code(path)
                self.loc_start[slot], self.loc_end[slot] = start, end
        n = self.n
        self.located = not bool(np.any(self.alive[:n] & (self.loc_path[:n] < 0)))

    def _quantize(self, lo: int, hi: int) -> None:
        """The int8 copy of rows ``lo..hi`` from the float32 rows (:func:`vecq.quantize`). When
        no other row has a vector the centre is chosen afresh, the mean of these rows' vectors
        (rows without one are exact zeros whatever the centre)."""
        if not self.dim or hi <= lo:
            return
        has = self.has_vec[: self.n]
        if not (has[:lo].any() or has[hi:].any()):
            self.q8mu = vecq.centre(self.vec[lo:hi], int(np.count_nonzero(has[lo:hi])))
        vecq.quantize(
            self.vec[lo:hi], self.q8mu, self.q8[lo:hi], self.q8s[lo:hi], self.q8e[lo:hi], self.q8n[lo:hi]
        )

    def _local_ids(self, gids: NDArray[np.int32], table: list[str]) -> NDArray[Any]:
        """This index's term ids of a tokenizer table's global ids (:class:`tokenize.TermIds`),
        terms new to the index numbered in order of first sight, as for strings: the same
        vocabulary, whichever form the terms came in. ``_gmap`` remembers global -> own id for
        one table (a term's own id never changes)."""
        if self._gtable is not table:
            self._gtable, self._gmap = table, np.full(0, -1, dtype=np.int64)
        if len(self._gmap) < len(table):
            grown = np.full(len(table) + len(table) // 4, -1, dtype=np.int64)
            grown[: len(self._gmap)] = self._gmap
            self._gmap = grown
        gmap, vocab = self._gmap, self.vocab
        if tokenize.accel is not None:  # the same loop in C, and the ids as int32
            return np.frombuffer(tokenize.accel.number_new(gids, gmap, vocab, table), dtype=np.int32)
        else:
            unknown = gids[gmap[gids] < 0]
            uniq, first = np.unique(unknown, return_index=True)
            for g in uniq[np.argsort(first, kind="stable")].tolist():
                term = table[g]
                tid = vocab.get(term)
                if tid is None:
                    tid = vocab[term] = len(vocab)
                gmap[g] = tid
        out: NDArray[np.int64] = gmap[gids]
        return out

    def _set_new_vectors(self, first: int, end: int, with_vec: list[tuple[int, Any]]) -> None:
        """Normalised vectors into the new slots ``first..end`` (``with_vec``: offset, vector).
        When every new slot has one of the right size (a bulk load) each row is copied once
        into place and normalised there, with no temporary matrix."""
        given = [v for _i, v in with_vec]
        if len(given) == end - first and all(map(self.dim.__eq__, map(len, given))):
            block = self.vec[first:end]
            try:  # one C loop copies every row into place
                np.concatenate(given, out=block.reshape(-1), casting="unsafe")
            except ValueError:
                block[...] = 0.0  # not all flat vectors: the general path below
            else:
                self.has_vec[first:end] = _normalise_rows(block)
                return
        vecs = [np.asarray(v, dtype=np.float32).reshape(-1) for _i, v in with_vec]
        rows = np.asarray(vecs)
        if rows.ndim == 2 and rows.shape[1] == self.dim:
            norms = np.linalg.norm(rows, axis=1)
            ok = _has_norm(norms)
            at = first + np.asarray([i for i, _v in with_vec], dtype=np.int64)
            self.vec[at[ok]] = rows[ok] / norms[ok, None]
            self.has_vec[at[ok]] = True

    def remove(self, ids: Iterable[int]) -> int:
        """Drop documents by id (unknown ids are ignored); returns how many were dropped."""
        dropped = 0
        for i in ids:
            slot = self.slot_of.pop(int(i), None)
            if slot is None:
                continue
            self.alive[slot] = False
            self.has_vec[slot] = False
            self.vec[slot] = 0.0
            self.q8[slot], self.q8s[slot], self.q8e[slot], self.q8n[slot] = 0, 0.0, 0.0, 0.0
            self.n_alive -= 1
            self.total_len -= float(self.dl[slot])
            dropped += 1
        if dropped:
            self._norm = None
            if not self.located:  # the slots without a location may be the ones gone
                n = self.n
                self.located = not bool(np.any(self.alive[:n] & (self.loc_path[:n] < 0)))
            if self.n > 1024 and self.n_alive < 0.7 * self.n:
                self.compact()
        return dropped

    def set_vectors(self, rows: Iterable[tuple[int, Any]]) -> None:
        """Give documents (by id) a new vector (``None`` clears it)."""
        for i, v in rows:
            slot = self.slot_of.get(int(i))
            if slot is None or not self.dim:
                continue
            if v is None:
                self.vec[slot] = 0.0
                self.has_vec[slot] = False
            else:
                v = np.asarray(v, dtype=np.float32).reshape(-1)
                norm = float(np.linalg.norm(v))
                ok = bool(_has_norm(norm))
                self.vec[slot] = v / norm if ok else 0.0
                self.has_vec[slot] = ok
            self._quantize(slot, slot + 1)

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

    def _consolidate(self) -> None:
        """Merge the segments into the base CSR, dropping dead slots."""
        n_terms = len(self.vocab)
        if not len(self._slots) and len(self._segments) == 1 and self.alive[: self.n].all():
            # A first bulk load: its one segment is already term-major with slots ascending.
            terms, self._slots, self._tf = self._segments[0]
            self._indptr = np.zeros(n_terms + 1, dtype=np.int64)
            np.cumsum(np.bincount(terms, minlength=n_terms), out=self._indptr[1:])
            self._segments.clear()
            self._merged.clear()
            return
        base_terms = np.repeat(np.arange(len(self._indptr) - 1, dtype=np.int64), np.diff(self._indptr))
        all_terms = np.concatenate([base_terms, *(t for t, _s, _f in self._segments)])
        all_slots = np.concatenate(
            [self._slots.astype(np.int64), *(s.astype(np.int64) for _t, s, _f in self._segments)]
        )
        all_tf = np.concatenate([self._tf, *(f for _t, _s, f in self._segments)])
        keep = self.alive[all_slots]
        terms, slots, tf = all_terms[keep], all_slots[keep], all_tf[keep]
        order = np.argsort(terms * max(1, self.n) + slots, kind="stable")
        self._slots = slots[order].astype(np.int32)
        self._tf = tf[order].astype(np.float32)
        self._indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(np.bincount(terms, minlength=n_terms), out=self._indptr[1:])
        self._segments.clear()
        self._merged.clear()

    def compact(self) -> None:
        """Drop dead slots (renumbering the live ones) and merge all postings."""
        self._consolidate()
        live = np.flatnonzero(self.alive[: self.n])
        remap = np.full(max(1, self.n), -1, dtype=np.int64)
        remap[live] = np.arange(len(live))
        self._slots = remap[self._slots].astype(np.int32)
        self.fwd.keep(live)
        self.psk.keep(live)
        for name in self._ARRAYS:
            arr = getattr(self, name)
            setattr(self, name, arr[live].copy())
        self.n = len(live)
        self.slot_of = dict(zip(self.ids.tolist(), range(self.n), strict=True))
        self._norm = None

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

    def bm25(self, terms: Sequence[str]) -> NDArray[np.float32]:
        """BM25 of every slot for these query terms (0 where none matches; dead slots 0)."""
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
        for term in dict.fromkeys(terms):
            tid = self.vocab.get(term)
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
                scores[slots] += contrib
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
        text_weight: float = 0.3,
        vector_weight: float = 0.7,
        boost: NDArray[np.float32] | None = None,
        pool: int | None = None,
        scan: str | None = None,
    ) -> Fused:
        """:func:`goclaw.retrieval.fusion.fuse_lists` of the lexical scores and the exact cosines
        of every slot to ``query`` (a :meth:`unit_query`; ``None``: no vector channel), found
        without computing them all: the int8 scan bounds each slot's cosine and only the slots
        that can reach the result are rescored (:func:`goclaw.retrieval.fusion.fuse_bounded`).
        ``scan``: ``"int8"`` (the C scan), ``"blas"`` (the float32 product's bounds: the path
        without the C module) or ``"dense"`` (every exact cosine); by default ``"dense"`` below
        :data:`DENSE_BELOW` slots, else ``"int8"`` (``"blas"`` without the C module). The
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

    def positions(self, slots: Sequence[int], terms: Sequence[str]) -> list[TermMatches]:
        """For each slot, the occurrences of those of ``terms`` it contains, a mapping
        ``{term: [i, ...]}`` that also carries the overlap reranker's features, computed for
        all the slots at once (:class:`goclaw.retrieval.rerank.TermMatches`)."""
        asked = list(dict.fromkeys(terms))
        known = [t for t in asked if t in self.vocab]
        return self.fwd.matches(asked, known, [self.vocab[t] for t in known], slots)

    def ids_of(self, slots: NDArray[np.int64]) -> list[int]:
        return [int(i) for i in self.ids[slots]]

    # ------------------------------------------------------------------ persistence
    _ARRAYS = ARRAYS

    def save(self, path: Path) -> None:
        """Write the whole index to the folder ``path``, atomically (one ``.npy`` per array,
        memory-mapped on load); see :func:`goclaw.retrieval.persist.save_index`."""
        save_index(self, path)

    @classmethod
    def load(cls, path: Path) -> SearchIndex:
        """Read an index written by :meth:`save` (raises ``ValueError`` if it is not one);
        see :func:`goclaw.retrieval.persist.load_index`."""
        return load_index(cls, path)
