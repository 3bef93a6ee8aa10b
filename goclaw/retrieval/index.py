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
* :meth:`save` / :meth:`load` persist everything in one ``.npz`` (written atomically), so a
  100k-chunk index is ready in a fraction of a second after a restart.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

K1 = 1.2
B = 0.75
FORMAT = 1


@dataclass(frozen=True)
class Doc:
    """One document to index: its id, scope (e.g. user id, ``""`` = shared), terms, optional
    vector and a fingerprint (anything that changes when the document does)."""

    id: int
    scope: str
    terms: Sequence[str]
    vector: Any = None
    fingerprint: int = 0


class SearchIndex:
    """Slots with BM25 postings and an aligned vector matrix (see the module docstring)."""

    def __init__(self, dim: int | None = None, *, meta: dict[str, Any] | None = None) -> None:
        self.dim = int(dim) if dim else 0
        self.meta: dict[str, Any] = dict(meta or {})
        self.vocab: dict[str, int] = {}
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
        self.n_alive = 0
        self.total_len = 0.0
        self._indptr = np.zeros(1, dtype=np.int64)
        self._slots = np.zeros(0, dtype=np.int32)
        self._tf = np.zeros(0, dtype=np.float32)
        self._pend: dict[int, tuple[list[int], list[float]]] = {}
        self._merged: dict[int, tuple[NDArray[np.int32], NDArray[np.float32]]] = {}
        self._norm: NDArray[np.float32] | None = None

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

    # ------------------------------------------------------------------ writes
    def upsert(self, docs: Iterable[Doc]) -> None:
        """Add documents (an id already present is replaced)."""
        docs = list(docs)
        self.remove([d.id for d in docs if d.id in self.slot_of])
        self._grow(self.n + len(docs))
        vocab, pend = self.vocab, self._pend
        for d in docs:
            slot = self.n
            self.n += 1
            self.slot_of[d.id] = slot
            self.ids[slot] = d.id
            self.scope[slot] = self.scopes.setdefault(d.scope, len(self.scopes))
            self.fp[slot] = d.fingerprint
            self.dl[slot] = len(d.terms)
            self.alive[slot] = True
            self.n_alive += 1
            self.total_len += len(d.terms)
            for term, tf in Counter(d.terms).items():
                tid = vocab.setdefault(term, len(vocab))
                entry = pend.get(tid)
                if entry is None:
                    pend[tid] = ([slot], [float(tf)])
                else:
                    entry[0].append(slot)
                    entry[1].append(float(tf))
                self._merged.pop(tid, None)
            if d.vector is not None and self.dim:
                v = np.asarray(d.vector, dtype=np.float32).reshape(-1)
                norm = float(np.linalg.norm(v))
                if v.shape[0] == self.dim and norm > 0:
                    self.vec[slot] = v / norm
                    self.has_vec[slot] = True
        self._norm = None

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
            self.n_alive -= 1
            self.total_len -= float(self.dl[slot])
            dropped += 1
        if dropped:
            self._norm = None
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
                continue
            v = np.asarray(v, dtype=np.float32).reshape(-1)
            norm = float(np.linalg.norm(v))
            self.vec[slot] = v / norm if norm > 0 else 0.0
            self.has_vec[slot] = norm > 0

    # ------------------------------------------------------------------ postings
    def _postings(self, tid: int) -> tuple[NDArray[np.int32], NDArray[np.float32]]:
        hit = self._merged.get(tid)
        if hit is not None:
            return hit
        if tid + 1 < len(self._indptr):
            lo, hi = int(self._indptr[tid]), int(self._indptr[tid + 1])
            slots, tf = self._slots[lo:hi], self._tf[lo:hi]
        else:
            slots, tf = np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        extra = self._pend.get(tid)
        if extra is not None:
            slots = np.concatenate([slots, np.asarray(extra[0], dtype=np.int32)])
            tf = np.concatenate([tf, np.asarray(extra[1], dtype=np.float32)])
        self._merged[tid] = (slots, tf)
        return slots, tf

    def _consolidate(self) -> None:
        """Merge appended postings into the base CSR, dropping dead slots."""
        n_terms = len(self.vocab)
        base_terms = np.repeat(np.arange(len(self._indptr) - 1, dtype=np.int64), np.diff(self._indptr))
        parts_t, parts_s, parts_f = [base_terms], [self._slots.astype(np.int64)], [self._tf]
        for tid, (p_slots, p_tf) in self._pend.items():
            parts_t.append(np.full(len(p_slots), tid, dtype=np.int64))
            parts_s.append(np.asarray(p_slots, dtype=np.int64))
            parts_f.append(np.asarray(p_tf, dtype=np.float32))
        all_terms = np.concatenate(parts_t)
        all_slots = np.concatenate(parts_s)
        all_tf = np.concatenate(parts_f)
        keep = self.alive[all_slots]
        terms, slots, tf = all_terms[keep], all_slots[keep], all_tf[keep]
        order = np.argsort(terms * max(1, self.n) + slots, kind="stable")
        self._slots = slots[order].astype(np.int32)
        self._tf = tf[order].astype(np.float32)
        self._indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(np.bincount(terms, minlength=n_terms), out=self._indptr[1:])
        self._pend.clear()
        self._merged.clear()

    def compact(self) -> None:
        """Drop dead slots (renumbering the live ones) and merge all postings."""
        self._consolidate()
        live = np.flatnonzero(self.alive[: self.n])
        remap = np.full(max(1, self.n), -1, dtype=np.int64)
        remap[live] = np.arange(len(live))
        self._slots = remap[self._slots].astype(np.int32)
        for name in ("ids", "scope", "dl", "alive", "fp", "vec", "has_vec"):
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
        codes = [self.scopes[s] for s in scopes if s in self.scopes]
        if not codes:
            return np.zeros(self.n, dtype=np.bool_)
        if len(codes) == len(self.scopes):
            return alive
        allowed = np.zeros(len(self.scopes), dtype=np.bool_)
        allowed[codes] = True
        return alive & allowed[self.scope[: self.n]]

    def bm25(self, terms: Sequence[str]) -> NDArray[np.float32]:
        """BM25 of every slot for these query terms (0 where none matches; dead slots 0)."""
        scores = np.zeros(self.n, dtype=np.float32)
        if not self.n_alive:
            return scores
        if self._norm is None:
            avgdl = self.total_len / max(1, self.n_alive)
            self._norm = (K1 * (1 - B + B * self.dl[: self.n] / max(avgdl, 1e-9))).astype(np.float32)
        norm = self._norm
        n_docs = float(self.n_alive)
        for term in dict.fromkeys(terms):
            tid = self.vocab.get(term)
            if tid is None:
                continue
            slots, tf = self._postings(tid)
            if not len(slots):
                continue
            live = self.alive[slots]
            df = int(np.count_nonzero(live))
            if not df:
                continue
            idf = np.float32(np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5)))
            contrib = idf * tf * np.float32(K1 + 1) / (tf + norm[slots])
            if df != len(slots):
                contrib *= live
            scores[slots] += contrib
        return scores

    def cosine(self, query_vector: Any) -> NDArray[np.float32] | None:
        """Cosine similarity of every slot to the query (0 for slots without a vector);
        ``None`` when the index holds no vectors or the query is zero / of another size."""
        if not self.dim or not self.n:
            return None
        q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        if q.shape[0] != self.dim or norm == 0.0:
            return None
        sims: NDArray[np.float32] = self.vec[: self.n] @ (q / norm)
        return sims

    def ids_of(self, slots: NDArray[np.int64]) -> list[int]:
        return [int(i) for i in self.ids[slots]]

    # ------------------------------------------------------------------ persistence
    def save(self, path: Path) -> None:
        """Write the whole index to ``path`` atomically (tmp file + rename)."""
        if self._pend:
            self._consolidate()
        meta = dict(self.meta)
        meta.update(
            format=FORMAT,
            dim=self.dim,
            n=self.n,
            n_alive=self.n_alive,
            total_len=self.total_len,
            scopes=self.scopes,
        )
        vocab = "\n".join(self.vocab).encode("utf-8")
        n = self.n
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(
                    fh,
                    meta=np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8),
                    vocab=np.frombuffer(vocab, dtype=np.uint8),
                    ids=self.ids[:n],
                    scope=self.scope[:n],
                    dl=self.dl[:n],
                    alive=self.alive[:n],
                    fp=self.fp[:n],
                    vec=self.vec[:n],
                    has_vec=self.has_vec[:n],
                    indptr=self._indptr,
                    slots=self._slots,
                    tf=self._tf,
                )
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: Path) -> SearchIndex:
        """Read an index written by :meth:`save` (raises ``ValueError`` if it is not one)."""
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(z["meta"].tobytes().decode("utf-8"))
            if meta.get("format") != FORMAT:
                raise ValueError(f"{path}: unsupported index format {meta.get('format')!r}")
            idx = cls(int(meta["dim"]), meta={k: v for k, v in meta.items()})
            raw = z["vocab"].tobytes().decode("utf-8")
            words = raw.split("\n") if raw else []
            idx.vocab = dict(zip(words, range(len(words)), strict=True))
            idx.n = int(meta["n"])
            idx.ids, idx.scope, idx.dl = z["ids"], z["scope"], z["dl"]
            idx.alive, idx.fp, idx.vec, idx.has_vec = z["alive"], z["fp"], z["vec"], z["has_vec"]
            idx._indptr, idx._slots, idx._tf = z["indptr"], z["slots"], z["tf"]
        if len(idx._indptr) != len(idx.vocab) + 1 or len(idx.ids) != idx.n:
            raise ValueError(f"{path}: inconsistent index file")
        idx.scopes = {str(k): int(v) for k, v in meta["scopes"].items()}
        idx.n_alive = int(meta["n_alive"])
        idx.total_len = float(meta["total_len"])
        live = np.flatnonzero(idx.alive)
        idx.slot_of = dict(zip(idx.ids[live].tolist(), live.tolist(), strict=True))
        return idx
