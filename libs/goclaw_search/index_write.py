"""The write side of a :class:`goclaw_search.index.SearchIndex`, a mixin over
its state (:class:`goclaw_search.index_slots.IndexSlots`): vectors set, normalised and
quantized, locations interned, a batch's terms numbered, documents removed, postings segments
merged into the base CSR and dead slots compacted. :meth:`SearchIndex.upsert
<goclaw_search.index.SearchIndex.upsert>` (in :mod:`goclaw_search.index`, beside the
side-thread threshold it reads) builds on these."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from goclaw_search import vecq
from goclaw_search.index_build import _has_norm, _normalise_rows
from goclaw_search.index_slots import IndexSlots

if TYPE_CHECKING:
    from numpy.typing import NDArray


class IndexWrites(IndexSlots):
    """Writes to a search index other than :meth:`~goclaw_search.index.SearchIndex.upsert`."""

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
        kernels = vecq.compiled
        if kernels is not None and hasattr(kernels, "first_seen") and gids.dtype == np.int32:
            new = kernels.first_seen(np.ascontiguousarray(gids), gmap)  # the same, one loop
        else:
            unknown = gids[gmap[gids] < 0]
            # Where each unknown id first occurs: written from the last occurrence back, so the
            # first one's position is what stays (a repeated index keeps the last value written).
            first = np.full(len(gmap), -1, dtype=np.int64)
            first[unknown[::-1]] = np.arange(len(unknown) - 1, -1, -1, dtype=np.int64)
            new = np.flatnonzero(first >= 0)
            new = new[np.argsort(first[new], kind="stable")]
        terms = list(map(table.__getitem__, new.tolist()))  # distinct: one global id per term
        if not vocab:  # a first load: every term is new, numbered as first seen
            vocab.update(zip(terms, range(len(terms)), strict=True))
            gmap[new] = np.arange(len(terms), dtype=np.int64)
        else:
            fresh = [t for t, tid in zip(terms, map(vocab.get, terms), strict=True) if tid is None]
            vocab.update(zip(fresh, range(len(vocab), len(vocab) + len(fresh)), strict=True))
            gmap[new] = np.fromiter(map(vocab.__getitem__, terms), dtype=np.int64, count=len(terms))
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
    def _consolidate(self) -> None:
        """Merge the segments into the base CSR, dropping dead slots."""
        n_terms = self.n_terms
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
