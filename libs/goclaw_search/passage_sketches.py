"""Passage sketches: the reranker's passage step without a tokenizer at search time.

Under a static model (a text's embedding is the normalised sum of its tokens' rows ``E_t``) a
passage's cosine with a unit query ``q`` is ``(Σ_t E_t·q) / ‖Σ_t E_t‖``. A chunk's **sketch**
holds what that needs, computed once when the chunk is indexed
(:class:`goclaw.contracts.providers.PassageSketchingEmbedder`): the token ids of its
*segments* (each heading line and each list item / paragraph / code block of
:func:`goclaw_search.passages.passage_layout`; a heading shared by the passages below it is
kept once), which segments make up each passage, and each passage's norm ``‖Σ_t E_t‖``. A search
then asks the embedder for one score ``E_t·q`` per distinct token of its best hits (one small
gather and product) and adds them up by segment and passage with two ``reduceat``: no regex, no
tokenizer, no numpy call per passage.

:class:`PassageSketches` keeps them per slot of a :class:`goclaw_search.index.SearchIndex`
(appended, compacted and saved with it; about 2 bytes per token of the collection plus ~20
bytes per passage: docs/memory.md "Passages").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "PassageSketch",
    "PassageSketches",
    "SketchBatch",
    "sketch_cosines",
    "spans",
    "starts",
    "token_dots",
]


class PassageSketch(NamedTuple):
    """One text's passages, in a form scored without its text (see the module docstring).

    ``tokens``: the token ids of its segments, segment after segment (only segments with a
    token); ``seg_len``: tokens per segment (each > 0); ``refs``: for passage after passage, the
    indices (into this text's segments) of the segments it is made of, ``nref`` of them (each
    > 0); ``norms``: ``‖Σ_t E_t‖`` of each passage (each > 0; a passage of norm 0 is left out).
    """

    tokens: NDArray[Any]
    seg_len: NDArray[Any]
    refs: NDArray[Any]
    nref: NDArray[np.uint8]
    norms: NDArray[np.float32]


class SketchBatch(NamedTuple):
    """The sketches of a few texts side by side (:meth:`PassageSketches.select`,
    :meth:`of`): ``refs`` index the batch's segments; ``n_pass`` passages per text; ``has``:
    whether a text has a sketch at all (one without is scored another way)."""

    tokens: NDArray[Any]
    seg_len: NDArray[Any]
    refs: NDArray[np.int64]
    nref: NDArray[Any]
    norms: NDArray[np.float32]
    n_pass: NDArray[np.int64]
    has: NDArray[np.bool_]

    @classmethod
    def of(cls, sketches: Sequence[PassageSketch | None]) -> SketchBatch:
        """The batch of these sketches (``None``: a text without one)."""
        present = [s for s in sketches if s is not None]
        empty = PassageSketch(
            np.zeros(0, np.uint16), np.zeros(0, np.uint16), np.zeros(0, np.uint8), np.zeros(0, np.uint8),
            np.zeros(0, np.float32),
        )  # fmt: skip
        parts = [s if s is not None else empty for s in sketches]
        n_seg = np.fromiter((len(s.seg_len) for s in parts), dtype=np.int64, count=len(parts))
        n_ref = np.fromiter((len(s.refs) for s in parts), dtype=np.int64, count=len(parts))
        n_pass = np.fromiter((len(s.norms) for s in parts), dtype=np.int64, count=len(parts))
        refs = _cat([s.refs for s in parts], np.uint8).astype(np.int64)
        refs += np.repeat(np.cumsum(n_seg) - n_seg, n_ref)
        return cls(
            _cat([s.tokens for s in present], np.uint16),
            _cat([s.seg_len for s in present], np.uint16),
            refs,
            _cat([s.nref for s in present], np.uint8),
            _cat([s.norms for s in present], np.float32),
            n_pass,
            np.fromiter((s is not None for s in sketches), dtype=np.bool_, count=len(sketches)),
        )


def _cat(arrays: Sequence[NDArray[Any]], dtype: Any) -> NDArray[Any]:
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=dtype)


def starts(lengths: NDArray[Any]) -> NDArray[np.int64]:
    """Where each of consecutive runs of these lengths starts."""
    out = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=out[1:])
    return out


def spans(first: NDArray[np.int64], width: NDArray[Any]) -> NDArray[np.int64]:
    """The positions ``first[i], first[i] + 1, ..., first[i] + width[i] - 1``, span after span."""
    return np.repeat(first - starts(width), width) + np.arange(int(width.sum()))


def sketch_cosines(batch: SketchBatch, token_scores: NDArray[Any]) -> NDArray[np.float32]:
    """For each text of ``batch``, its best passage's cosine (0 when none is positive, and for a
    text without a sketch); ``token_scores[i]`` is ``E_t·q`` of ``batch.tokens[i]`` for the unit
    query ``q``. Sums in float64: the same figure as embedding each passage, within 1e-6."""
    best = np.zeros(len(batch.has), dtype=np.float32)
    if not len(batch.norms):
        return best
    seg_dot = np.add.reduceat(token_scores, starts(batch.seg_len), dtype=np.float64)
    cos = np.add.reduceat(seg_dot[batch.refs], starts(batch.nref))
    cos /= batch.norms
    if batch.n_pass.all():
        best[:] = np.maximum.reduceat(cos, starts(batch.n_pass))
    else:
        some = batch.n_pass > 0
        best[some] = np.maximum.reduceat(cos, starts(batch.n_pass)[some])
    np.maximum(best, 0.0, out=best)
    return best


def token_dots(matrix: NDArray[np.float32], q: NDArray[np.float32], ids: Any) -> NDArray[np.float32]:
    """``matrix[i]·q`` (float32) for each token id ``i`` of ``ids``, each distinct row read once
    (one gather of the distinct rows and one product)."""
    ids = np.asarray(ids).reshape(-1)  # uint16 ids index as they are
    seen = np.zeros(matrix.shape[0], dtype=np.bool_)
    seen[ids] = True
    rows = np.flatnonzero(seen)
    dense = np.empty(matrix.shape[0], dtype=np.float32)  # only the rows read are ever read back
    dense[rows] = np.einsum("ij,j->i", matrix.take(rows, axis=0), q)
    out: NDArray[np.float32] = dense[ids]
    return out


_WORD = np.dtype("<u2")  # a layout word
_NORM = np.dtype("<f4")  # a norm, as two layout words
_KINDS = np.tile(np.arange(4, dtype=np.int8), 4096)  # the layout's four fields, slot after slot


def _fits(sketch: PassageSketch | None) -> PassageSketch | None:
    """The sketch if its layout fits in 16-bit words (up to 65,535 segments, references and
    passages, and tokens per segment: a chunk would need more characters than that), else
    None (its slot is scored from its text)."""
    if sketch is None:
        return None
    if max(len(sketch.seg_len), len(sketch.refs), len(sketch.norms)) > 0xFFFF:
        return None
    if sketch.seg_len.dtype.itemsize > 2 and len(sketch.seg_len) and int(sketch.seg_len.max()) > 0xFFFF:
        return None
    tokens = np.asarray(sketch.tokens)
    if tokens.dtype == np.uint16:  # the static embedder's: fits by type
        return sketch
    small = not len(tokens) or 0 <= int(tokens.min()) <= int(tokens.max()) <= 0xFFFF
    if tokens.dtype != np.uint16 and small:
        return sketch._replace(tokens=tokens.astype(np.uint16))  # a provider's int64 ids: 2 bytes each
    return sketch


def _layouts(sketches: Sequence[PassageSketch], n: NDArray[np.int64]) -> NDArray[Any]:
    """The sketches' layouts one after another, each ``seg_len, refs, nref, norms`` (a norm as
    two words); ``n``: each sketch's segments, references and passages (first three columns).
    Each field is joined over all sketches once and scattered to its places."""
    widths = np.stack([n[:, 0], n[:, 1], n[:, 2], 2 * n[:, 2]], axis=1)  # words per field
    out = np.empty(int(widths.sum()), dtype=_WORD)
    field_at = starts(widths.ravel()).reshape(widths.shape)  # where each field of each sketch starts
    for k, name in enumerate(("seg_len", "refs", "nref", "norms")):
        if name == "norms":
            words = _cat([s.norms.astype(_NORM, copy=False) for s in sketches], _NORM).view(_WORD)
        else:
            words = _cat([getattr(s, name) for s in sketches], _WORD).astype(_WORD, copy=False)
        out[spans(field_at[:, k], widths[:, k])] = words
    return out


class PassageSketches:
    """The sketches of every slot of a search index, appended in slot order (like
    :class:`goclaw_search.forward.ForwardIndex`: appends are kept as parts and joined on the
    next read). Slot ``s`` has one when ``has[s]``: its token ids ``tokens[ptr[s, 0]:ptr[s + 1,
    0]]`` and its layout ``layout[ptr[s, 1]:ptr[s + 1, 1]]``, 16-bit words holding its
    ``seg_len``, ``refs``, ``nref`` and the bits of its float32 ``norms``, ``counts[s]`` = (segments,
    references, passages). Two arrays per slot: a search reads its hits' with two slices each."""

    def __init__(self) -> None:
        self.tokens: NDArray[Any] = np.zeros(0, dtype=np.uint16)
        self.layout: NDArray[Any] = np.zeros(0, dtype=_WORD)
        self.counts: NDArray[Any] = np.zeros((0, 3), dtype=_WORD)
        self.has: NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)
        self.ptr: NDArray[np.int64] = np.zeros((1, 2), dtype=np.int64)
        self._parts: list[list[PassageSketch | None]] = []
        # Memoryviews of tokens and layout, and the has flags as bytes (cheap to index).
        self._views: tuple[memoryview, memoryview, bytes] | None = None

    @property
    def slots(self) -> int:
        return len(self.has) + sum(map(len, self._parts))

    def append(self, sketches: Sequence[PassageSketch | None]) -> None:
        """Add the next ``len(sketches)`` slots (``None``: a slot without a sketch)."""
        self._parts.append([_fits(s) for s in sketches])

    def _join(self) -> None:
        if not self._parts:
            return
        every = [s for part in self._parts for s in part]
        present = [s for s in every if s is not None]
        has = np.fromiter((s is not None for s in every), dtype=np.bool_, count=len(every))
        # Per slot: segments, references, passages, tokens (0 for a slot without a sketch).
        n = np.zeros((len(every), 4), dtype=np.int64)
        n[has] = np.array(
            [(len(s.seg_len), len(s.refs), len(s.norms), len(s.tokens)) for s in present], dtype=np.int64
        ).reshape(-1, 4)
        sizes = np.stack([n[:, 3], n[:, 0] + n[:, 1] + 3 * n[:, 2]], axis=1)
        self.tokens = _cat([self.tokens, *(s.tokens for s in present)], np.uint16)
        self.layout = np.concatenate([self.layout, _layouts(present, n[has])])
        self.counts = np.concatenate([self.counts, n[:, :3].astype(_WORD)])
        self.has = np.concatenate([self.has, has])
        self.ptr = np.concatenate([self.ptr, self.ptr[-1] + np.cumsum(sizes, axis=0)])
        self._parts.clear()
        self._views = None

    def keep(self, live: NDArray[np.int64]) -> None:
        """Keep only the slots ``live`` (sorted), renumbered 0..len(live)-1."""
        self._join()
        sizes = np.diff(self.ptr, axis=0)
        kept = np.zeros(len(sizes), dtype=np.bool_)
        kept[live] = True
        self.tokens = self.tokens[np.repeat(kept, sizes[:, 0])]
        self.layout = self.layout[np.repeat(kept, sizes[:, 1])]
        self.counts, self.has = self.counts[live], self.has[live]
        self.ptr = np.zeros((len(live) + 1, 2), dtype=np.int64)
        np.cumsum(sizes[live], axis=0, out=self.ptr[1:])
        self._views = None

    def select(self, slots: Sequence[int]) -> SketchBatch:
        """The sketches of these slots side by side (a slot ``< 0`` or beyond: none)."""
        self._join()
        if self._views is None:
            views: Any = (np.ascontiguousarray(self.tokens), np.ascontiguousarray(self.layout))
            self._views = (memoryview(views[0]), memoryview(views[1]), self.has.tobytes())
        tok_view, word_view, flags = self._views
        n = len(flags)
        has = [0 <= s < n and flags[s] != 0 for s in slots]
        at = [s for s, h in zip(slots, has, strict=True) if h]
        if not at or len(at) > 4096:
            return SketchBatch.of([None] * len(has) if not at else [self._one(s) for s in slots])
        lo, hi = self.ptr[at].T.tolist(), self.ptr[np.add(at, 1)].T.tolist()
        # A search's few hits: slices of a memoryview joined are the cheapest gather.
        tokens = np.frombuffer(
            b"".join([tok_view[a:b] for a, b in zip(lo[0], hi[0], strict=True)]), dtype=self.tokens.dtype
        )
        words = np.frombuffer(b"".join([word_view[a:b] for a, b in zip(lo[1], hi[1], strict=True)]), _WORD)
        fields = np.empty((len(at), 4), dtype=np.int64)  # per slot: segments, refs, passages, norm words
        fields[:, :3] = self.counts[at]
        np.multiply(fields[:, 2], 2, out=fields[:, 3])
        n_seg, n_ref, n_pass = fields[:, 0], fields[:, 1], fields[:, 2]
        kind = np.repeat(_KINDS[: 4 * len(at)], fields.reshape(-1))
        grouped = words[np.argsort(kind, kind="stable")]  # each field's words, slot after slot
        ends = np.cumsum(fields.sum(axis=0)).tolist()
        refs = grouped[ends[0] : ends[1]].astype(np.int64)
        refs += np.repeat(np.cumsum(n_seg) - n_seg, n_ref)
        present = np.array(has, dtype=np.bool_)
        passages = np.zeros(len(has), dtype=np.int64)
        passages[present] = n_pass
        return SketchBatch(
            tokens,
            grouped[: ends[0]],
            refs,
            grouped[ends[1] : ends[2]],
            grouped[ends[2] :].view(_NORM),
            passages,
            present,
        )

    def best_cosines(
        self, slots: Sequence[int], matrix: NDArray[np.float32], q: NDArray[np.float32]
    ) -> tuple[NDArray[np.float32], NDArray[np.bool_]]:
        """For each slot, its best passage's cosine with the unit query ``q`` (0 when none is
        positive or the slot has no sketch) and whether it has a sketch, the token scores being
        the rows of ``matrix`` (float32, ``E_t``) dot ``q``: :meth:`select`,
        :func:`token_dots` and :func:`sketch_cosines` in one call."""
        batch = self.select(slots)
        scores = token_dots(matrix, q, batch.tokens) if len(batch.tokens) else np.zeros(0, np.float32)
        return sketch_cosines(batch, scores), batch.has

    def _one(self, slot: int) -> PassageSketch | None:
        """One slot's sketch (for a selection too large for :meth:`select`'s fast path)."""
        if not (0 <= slot < len(self.has)) or not self.has[slot]:
            return None
        batch = self.select([slot])
        return PassageSketch(batch.tokens, batch.seg_len, batch.refs, batch.nref, batch.norms)

    @property
    def nbytes(self) -> int:
        """Bytes its arrays hold."""
        self._join()
        return sum(a.nbytes for a in (self.tokens, self.layout, self.counts, self.has, self.ptr))

    def arrays(self) -> dict[str, Any]:
        """What :meth:`from_arrays` reads back (for saving)."""
        self._join()
        return {
            "psk_tokens": self.tokens,
            "psk_layout": self.layout,
            "psk_counts": self.counts,
            "psk_has": self.has,
            "psk_ptr": self.ptr,
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, Any]) -> PassageSketches:
        store = cls()
        store.tokens, store.layout = arrays["psk_tokens"], arrays["psk_layout"]
        store.counts, store.has, store.ptr = arrays["psk_counts"], arrays["psk_has"], arrays["psk_ptr"]
        return store
