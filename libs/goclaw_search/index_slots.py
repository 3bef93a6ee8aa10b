"""The state of a :class:`goclaw_search.index.SearchIndex`: every attribute,
set in one ``__init__``, and the per-slot arrays' growth. :class:`IndexSlots` is the base of the
index's write side (:mod:`goclaw_search.index_write`) and read side
(:mod:`goclaw_search.index_read`), which :class:`~goclaw_search.index.SearchIndex`
combines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from goclaw_search.forward import ForwardIndex
from goclaw_search.index_build import Vocab
from goclaw_search.passage_sketches import PassageSketches
from goclaw_search.vocab_table import SavedVocab

if TYPE_CHECKING:
    from numpy.typing import NDArray


class IndexSlots:
    """A search index's slots: per-slot arrays, postings, vocabulary, forward index and
    passage sketches (see :mod:`goclaw_search.index`)."""

    # The per-slot arrays (goclaw_search.persist saves one .npy each).
    _ARRAYS = (
        *("ids", "scope", "dl", "alive", "fp", "vec", "has_vec", "q8", "q8s", "q8e", "q8n"),
        *("loc_path", "loc_start", "loc_end"),
    )

    def __init__(self, dim: int | None = None, *, meta: dict[str, Any] | None = None) -> None:
        self.dim = int(dim) if dim else 0
        self.meta: dict[str, Any] = dict(meta or {})
        # Term -> id. An index loaded from disk starts with its saved table instead
        # (``_saved_vocab``): searches look their terms up there (:meth:`term_id`) and the dict
        # is built on first use of :attr:`vocab` (a write, a save after one).
        self._vocab: Vocab | None = Vocab()
        self._saved_vocab: SavedVocab | None = None
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
        # (goclaw_search.vecq), kept in step with ``vec`` by every write.
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
    @property
    def vocab(self) -> Vocab:
        """Term -> term id, in id order (built from the saved table on first use)."""
        if self._vocab is None:
            assert self._saved_vocab is not None
            vocab = Vocab()
            words = self._saved_vocab.words()
            vocab.update(zip(words, range(len(words)), strict=True))
            self._vocab, self._saved_vocab = vocab, None
        return self._vocab

    @vocab.setter
    def vocab(self, vocab: Vocab) -> None:
        self._vocab, self._saved_vocab = vocab, None

    def term_id(self, term: str) -> int | None:
        """The term's id, ``None`` for a term the index does not hold."""
        vocab, saved = self._vocab, self._saved_vocab
        if vocab is None and saved is not None:
            return saved.get(term)
        return self.vocab.get(term)  # (also when a write built the dict between the two reads)

    @property
    def n_terms(self) -> int:
        return len(self._vocab) if self._vocab is not None else len(self._saved_vocab or ())

    def detach_vocab(self) -> None:
        """Give a shallow copy of an index (``copy.copy``) a vocabulary of its own: a built dict
        is copied, a saved table (read-only) stays shared."""
        if self._vocab is not None:
            self._vocab = Vocab(self._vocab)

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
