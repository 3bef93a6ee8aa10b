"""The static embedder's passage sketches and token scores, for the memory reranker's passage
step (docs/memory.md "After fusion: reranker, passages, decay and MMR").

A static model embeds a text as the normalised sum of its tokens' rows, so a passage's cosine
with a unit query ``q`` is ``(Σ_t E_t·q) / ‖Σ_t E_t‖``: :func:`sketch` keeps, per text, its
segments' token ids, which segments make each passage and each passage's norm
(:class:`goclaw_search.passage_sketches.PassageSketch`); :func:`token_scores` gives
``E_t·q`` for a search's tokens with one gather of the distinct rows.

Tokens: a passage's tokens are those of its whitespace-separated pieces (the tokenizer never
joins across whitespace), so each distinct piece is tokenised once and remembered by number
(:class:`PieceMemory`: one per call, or one per job of calls, ``passage_sketcher()``); a
batch's new pieces are tokenised as one string, their tokens told apart by their offsets.
The loops over a batch's pieces, tokens and passages run compiled where ``goclaw_search._vec``
is built (``passage_pieces``: the pieces numbered by a hash table of their bytes;
``piece_tokens``; ``passage_norms``), else by a dictionary and numpy (:func:`_numbers`,
:func:`_piece_tokens`, :func:`_norms`: exact sums, so one sparse product): the same arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from goclaw_search.passage_sketches import PassageSketch, spans, starts, token_dots
from goclaw_search.passages import passage_layout
from goclaw_search.vecq import compiled as _vec

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from goclaw_embeddings.static_model import StaticEmbedder

_BATCH = 256  # texts whose pieces are looked up (and new ones tokenised) together
_FEW = 32  # texts from which a call tokenises its new pieces itself (fewer: the embedder's cache)
_LOCAL_PIECES = 100_000  # pieces one passage_sketches call remembers
_END = "\x00"  # the dictionary path's piece that ends a segment (the segments split as one string)


def _uint(top: int) -> Any:
    """The smallest unsigned type that holds ``0..top``."""
    return np.uint8 if top < 2**8 else np.uint16 if top < 2**16 else np.uint32


class PieceMemory:
    """The pieces tokenised so far, each by its number (in order of first sight), and their
    token ids side by side (``ids[first[k] : first[k] + count[k]]``, unknown tokens dropped);
    at most ``limit`` pieces (forgotten whole before a batch that finds more). ``cached``: new
    pieces are looked up in the embedder's piece cache (a search's few texts) rather than
    tokenised here. Pieces are numbered by a compiled hash table of their UTF-8 bytes
    (``goclaw_search._vec``) where it is built, else by a dictionary: the same numbers."""

    def __init__(self, limit: int, cached: bool = False, compiled: bool | None = None) -> None:
        self.limit = limit
        self.cached = cached
        self.compiled = _vec is not None if compiled is None else compiled
        self.new: list[str] = []  # pieces numbered since they were last tokenised
        self.forget()

    def forget(self) -> None:
        self.new = []
        self.size = 0  # pieces numbered
        self._ids = np.zeros(1024, dtype=np.int32)
        self._first = np.zeros(1024, dtype=np.int64)
        self._count = np.zeros(1024, dtype=np.int64)
        self._n_ids = 0
        self._numbers = _Numbers(self)
        # The compiled table: each piece's bytes (and a space) in the arena, at _at, _bytes long.
        self._slots = np.full(1024, -1, dtype=np.int64)
        self._arena = np.zeros(4096, dtype=np.uint8)
        self._at = np.zeros(1024, dtype=np.int64)
        self._bytes = np.zeros(1024, dtype=np.int64)
        self._used = 0

    def number(self, segments: list[str], has_end: bool) -> NDArray[np.int64]:
        """The numbers of the segments' pieces (str.split), segment after segment, each
        segment's followed by -1 but the last's; new pieces numbered (and listed in ``new``).
        ``has_end``: a text holds the piece :func:`_numbers` joins segments with."""
        if self.size > self.limit:
            self.forget()
        if not self.compiled:
            return _numbers(segments, self._numbers, has_end)
        data = " ".join(segments).encode("utf-8", "surrogatepass")
        seg_end = np.cumsum(np.fromiter(map(len, segments), dtype=np.int64, count=len(segments)) + 1) - 1
        most = (len(data) + 1) // 2  # new pieces at most
        self._at, self._bytes = _room(self._at, self.size + most), _room(self._bytes, self.size + most)
        self._arena = _room(self._arena, self._used + len(data) + most)
        if 2 * (self.size + most) > len(self._slots):
            self._slots = np.full(1 << (2 * (self.size + most)).bit_length(), -1, dtype=np.int64)
            _vec.passage_piece_slots(self._arena, self._at, self._bytes, self.size, self._slots)
        which: NDArray[np.int64]
        which, size, used = _vec.passage_pieces(
            np.frombuffer(data, dtype=np.uint8), seg_end, self._slots, self._arena, self._at, self._bytes,
            self.size, self._used,
        )  # fmt: skip
        if size > self.size:
            fresh = self._arena[self._used : used - 1].tobytes().decode("utf-8", "surrogatepass")
            self.new = fresh.split(" ")
            self.size, self._used = size, used
        return which

    def arrays(self) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int32]]:
        """(first, count, ids) of the pieces numbered so far."""
        n = self.size
        return self._first[:n], self._count[:n], self._ids[: self._n_ids]

    def add(self, counts: NDArray[np.int64], ids: NDArray[Any]) -> None:
        """The token ids of the new pieces (``counts`` of each), in their order."""
        k, n = self.size - len(self.new), self.size
        self._first, self._count = _room(self._first, n), _room(self._count, n)
        self._ids = _room(self._ids, self._n_ids + len(ids))
        self._count[k:n] = counts
        self._first[k:n] = self._n_ids + starts(counts)
        self._ids[self._n_ids : self._n_ids + len(ids)] = ids
        self._n_ids += len(ids)
        self.new = []


class _Numbers(dict[str, int]):
    """The dictionary path's piece numbers: a piece not in it is numbered next."""

    def __init__(self, memory: PieceMemory) -> None:
        super().__init__()
        self.memory = memory

    def __missing__(self, piece: str) -> int:
        memory = self.memory
        number = self[piece] = memory.size
        memory.size += 1
        memory.new.append(piece)
        return number


def _room(a: NDArray[Any], n: int) -> NDArray[Any]:
    """``a``, or a copy twice as large and more when it holds fewer than ``n`` values."""
    if n <= len(a):
        return a
    grown = np.zeros(max(n, 2 * len(a)), dtype=a.dtype)
    grown[: len(a)] = a
    return grown


def sketches(
    emb: StaticEmbedder, texts: Sequence[str], memory: PieceMemory | None = None
) -> list[PassageSketch]:
    """The passage sketch of each text (see the module docstring), batch after batch: each
    new piece tokenised by the embedder's tokenizer (HF ``tokenizers``), the rest in the
    compiled loops or numpy. ``memory``: the pieces already tokenised by earlier calls of one
    job (this call's own otherwise)."""
    emb.load()
    matrix = emb._matrix
    assert matrix is not None
    out: list[PassageSketch] = []
    if memory is None:
        memory = PieceMemory(_LOCAL_PIECES, cached=len(texts) < _FEW)
    for start in range(0, len(texts), _BATCH):
        part = texts[start : start + _BATCH]
        out.extend(_cut(len(part), _flat(emb, part, memory), matrix.shape[0]))
    return out


def sketcher(emb: StaticEmbedder, limit: int) -> Callable[[Sequence[str]], list[PassageSketch]]:
    """:func:`sketches` for one job's run of calls, remembering up to ``limit`` pieces."""
    memory = PieceMemory(limit)
    return lambda texts: sketches(emb, texts, memory)


class _Flat(NamedTuple):
    """A batch's sketches side by side: the tokens of its known segments (those with a token),
    their token counts, the kept passages' references (into their text's known segments), their
    reference counts and norms, and per text (``counts``, 4 per text) its number of tokens,
    known segments, kept references and kept passages."""

    tokens: NDArray[Any]
    seg_len: NDArray[Any]
    refs: NDArray[Any]
    nref: NDArray[Any]
    norms: NDArray[np.float32]
    counts: NDArray[np.int64]


def _cut(n: int, flat: _Flat, rows: int) -> list[PassageSketch]:
    """The batch's arrays cut back into one sketch per text, each array of the smallest type
    that holds the batch's values."""
    if not len(flat.tokens):
        return [_EMPTY] * n
    tokens = flat.tokens.astype(_uint(rows - 1))
    seg_len = flat.seg_len.astype(_uint(int(flat.seg_len.max())))
    refs = flat.refs.astype(_uint(int(flat.refs.max()) if len(flat.refs) else 0))
    nref = flat.nref.astype(np.uint8)
    norms = flat.norms.astype(np.float32)
    bounds = np.cumsum(flat.counts.reshape(n, 4), axis=0).T.tolist()
    out: list[PassageSketch] = []
    lo = [0, 0, 0, 0]
    for k in range(n):
        hi = [b[k] for b in bounds]
        if hi[3] == lo[3]:
            out.append(_EMPTY)
        else:
            out.append(
                PassageSketch(
                    tokens[lo[0] : hi[0]],
                    seg_len[lo[1] : hi[1]],
                    refs[lo[2] : hi[2]],
                    nref[lo[3] : hi[3]],
                    norms[lo[3] : hi[3]],
                )
            )
        lo = hi
    return out


def _flat(emb: StaticEmbedder, texts: Sequence[str], memory: PieceMemory) -> _Flat:
    """The sketches of a batch, computed over the whole batch at once (flat arrays
    of its segments, passages and tokens)."""
    matrix = emb._matrix
    assert matrix is not None
    layouts = [passage_layout(t) for t in texts]
    segments = [segment for segs, _p in layouts for segment in segs]
    which = memory.number(segments, any(_END in t for t in texts))
    if memory.new:
        memory.add(*_tokenise(emb, memory))
    tokens, seg_tokens = _piece_tokens(which, *memory.arrays(), len(segments))
    known = seg_tokens > 0  # a segment without a known token adds nothing to a passage
    n_segs = np.fromiter((len(segs) for segs, _p in layouts), dtype=np.int64, count=len(texts))
    seg_base = starts(n_segs)
    # Passages: their segments (references), flat over the batch.
    listed = [layout for _s, layout in layouts]
    n_pass = np.fromiter(map(len, listed), dtype=np.int64, count=len(texts))
    raw_nref = np.fromiter(map(len, chain.from_iterable(listed)), dtype=np.int64)
    text_of_pass = np.repeat(np.arange(len(texts)), n_pass)
    ref_seg = np.fromiter(chain.from_iterable(chain.from_iterable(listed)), dtype=np.int64)
    ref_seg += np.repeat(seg_base[text_of_pass], raw_nref)
    pass_of_ref = np.repeat(np.arange(len(raw_nref)), raw_nref)
    kept = known[ref_seg]
    ref_seg, pass_of_ref = ref_seg[kept], pass_of_ref[kept]
    nref = np.bincount(pass_of_ref, minlength=len(raw_nref))
    norms = _passage_norms(matrix, tokens, seg_tokens, ref_seg, nref)
    keep = (nref > 0) & (norms > 0)  # a passage whose tokens cancel out: cosine 0, left out
    keep_ref = keep[pass_of_ref]
    known_before = np.zeros(len(known) + 1, dtype=np.int64)
    np.cumsum(known, out=known_before[1:])
    text_of_ref = np.repeat(text_of_pass, nref)
    local_ref = known_before[ref_seg] - known_before[seg_base[text_of_ref]]
    text_of_seg = np.repeat(np.arange(len(texts)), n_segs)
    counts = np.stack(
        [
            np.bincount(text_of_seg, weights=seg_tokens, minlength=len(texts)).astype(np.int64),
            np.bincount(text_of_seg[known], minlength=len(texts)),
            np.bincount(text_of_ref[keep_ref], minlength=len(texts)),
            np.bincount(text_of_pass[keep], minlength=len(texts)),
        ],
        axis=1,
    ).reshape(-1)
    return _Flat(tokens, seg_tokens[known], local_ref[keep_ref], nref[keep], norms[keep], counts)


def _numbers(segments: list[str], numbers: _Numbers, has_end: bool) -> NDArray[np.int64]:
    """:meth:`PieceMemory.number` by a dictionary: the segments split as one string, joined by
    a piece of their own, unless a text holds that piece's character."""
    if not segments:
        return np.zeros(0, dtype=np.int64)
    if has_end:
        parts = [[*map(numbers.__getitem__, segment.split()), -1] for segment in segments]
        parts[-1].pop()
        return np.fromiter(chain.from_iterable(parts), dtype=np.int64)
    numbered = numbers.pop(_END, None)  # a piece of an earlier batch
    numbers[_END] = -1
    try:
        pieces = f"\n{_END}\n".join(segments).split()
        return np.fromiter(map(numbers.__getitem__, pieces), dtype=np.int64, count=len(pieces))
    finally:
        del numbers[_END]
        if numbered is not None:
            numbers[_END] = numbered


def _tokenise(emb: StaticEmbedder, memory: PieceMemory) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(counts, ids): the token ids of ``memory``'s new pieces, unknown tokens dropped as
    :meth:`StaticEmbedder.embed` does: from the embedder's piece cache (``memory.cached``) or
    tokenised as one string, pieces one space apart, each token the piece's its offset falls in
    (a piece longer than the tokenizer's truncation alone)."""
    new = memory.new
    if memory.cached:
        found = emb._piece_lookup(set(new))
        lists = [found[w] for w in new]
        counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        return counts, np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(counts.sum()))
    tok, limit = _whole(emb)
    enc = tok.encode(" ".join(new), add_special_tokens=False)
    ids = np.asarray(enc.ids, dtype=np.int64)
    at = np.fromiter(chain.from_iterable(enc.offsets), dtype=np.int64, count=2 * len(ids))[::2]
    sizes = np.fromiter(map(len, new), dtype=np.int64, count=len(new)) + 1
    owner = np.searchsorted(np.cumsum(sizes), at, side="right")
    unk = emb._conf().get("unk_token_id")
    if unk is not None and emb._conf().get("drop_unk_tokens", True):
        kept = ids != int(unk)
        all_counts = np.bincount(owner, minlength=len(new))
        ids, owner = ids[kept], owner[kept]
    else:
        all_counts = None
    counts = np.bincount(owner, minlength=len(new))
    long = np.flatnonzero((counts if all_counts is None else all_counts) > limit)
    if len(long):  # truncated alone: tokenised alone
        parts: list[NDArray[np.int64]] = np.split(ids, np.cumsum(counts)[:-1])
        for k, piece_ids in zip(long.tolist(), emb._piece_ids([new[k] for k in long]), strict=True):
            parts[k] = np.asarray(piece_ids, dtype=np.int64)
        counts = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
        ids = np.concatenate(parts)
    return counts, ids


_WHOLE: dict[int, tuple[Any, Any, int]] = {}


def _whole(emb: StaticEmbedder) -> tuple[Any, int]:
    """A copy of the embedder's tokenizer that does not truncate (kept per tokenizer: loaded
    tokenizers are shared and not changed), and the token count it truncates a text to."""
    tok = emb._tokenizer
    assert tok is not None
    found = _WHOLE.get(id(tok))
    if found is None or found[0] is not tok:
        from tokenizers import Tokenizer

        whole = Tokenizer.from_str(tok.to_str())
        whole.no_truncation()
        cut = tok.truncation
        found = (tok, whole, int(cut["max_length"]) if cut else 2**62)
        if len(_WHOLE) >= 4:
            _WHOLE.clear()
        _WHOLE[id(tok)] = found
    return found[1], found[2]


def _piece_tokens(
    which: NDArray[np.int64],
    first: NDArray[np.int64],
    count: NDArray[np.int64],
    ids: NDArray[np.int32],
    n_seg: int,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(tokens, seg_tokens): the token ids of the pieces ``which`` numbers, side by side, and
    how many each of the ``n_seg`` segments has (a number < 0 ends a segment); compiled where
    ``goclaw_search._vec`` is built."""
    if _vec is not None:
        out: tuple[NDArray[np.int64], NDArray[np.int64]] = _vec.piece_tokens(which, first, count, ids, n_seg)
        return out
    piece = which >= 0
    numbers = which[piece]
    per = count[numbers]
    tokens = ids[spans(first[numbers], per)].astype(np.int64)
    seg_of = np.cumsum(~piece)[piece]
    return tokens, np.bincount(seg_of, weights=per, minlength=n_seg).astype(np.int64)


def _passage_norms(
    matrix: NDArray[np.float32],
    tokens: NDArray[np.int64],
    seg_tokens: NDArray[np.int64],
    ref_seg: NDArray[np.int64],
    nref: NDArray[np.int64],
) -> NDArray[np.float32]:
    """:func:`_norms`, compiled where ``goclaw_search._vec`` is built (the same numbers)."""
    if _vec is None:
        return _norms(matrix, tokens, seg_tokens, ref_seg, nref)
    top = _float16_top(matrix)
    out: NDArray[np.float32] = _vec.passage_norms(
        np.ascontiguousarray(matrix, dtype=np.float32),
        tokens,
        seg_tokens,
        ref_seg,
        nref,
        -1.0 if top is None else top,
    )
    return out


def _norms(
    matrix: NDArray[np.float32],
    tokens: NDArray[np.int64],
    seg_tokens: NDArray[np.int64],
    ref_seg: NDArray[np.int64],
    nref: NDArray[np.int64],
) -> NDArray[np.float32]:
    """``‖Σ_t E_t‖`` of each passage: ``tokens`` those of the segments side by side
    (``seg_tokens`` of each), ``ref_seg`` the segments of passage after passage (``nref`` of
    each), in a fixed order of operations: each passage's rows (its segments' tokens in order)
    added one after the other in float64, the sums rounded to float32, their squares (exact in
    float64) added column after column.

    When every row value is a float16 value (a model quantised to float16, as the bundled one)
    and no passage is long enough to reach 2**29 in a column, each float64 sum of those values is
    exact whatever the order: the values are multiples of 2**-24, so every partial sum is a
    multiple of 2**-24 below 2**29, which float64's 53 bits hold. The sums are then two sparse
    products (each segment's rows, then each passage's segments), the same numbers as the
    token-after-token loop (:func:`_ordered_sums`) that runs otherwise or for a few tokens."""
    n = len(nref)
    width = seg_tokens[ref_seg]
    per = np.bincount(np.repeat(np.arange(n), nref), weights=width, minlength=n).astype(np.int64)
    top = _float16_top(matrix) if int(per.sum()) >= _SPARSE_FROM else None  # a search's few: no
    if top is not None and int(per.max()) * top < 2.0**29:
        from scipy.sparse import csr_matrix

        present = np.zeros(matrix.shape[0], dtype=np.bool_)
        present[tokens] = True
        rows = np.flatnonzero(present)
        column = np.cumsum(present) - 1  # a row's place among the present ones
        seg_ptr = np.concatenate([[0], np.cumsum(seg_tokens)])
        segs = csr_matrix((np.ones(len(tokens)), column[tokens], seg_ptr), shape=(len(seg_tokens), len(rows)))
        seg_sums = segs @ matrix.take(rows, axis=0).astype(np.float64)
        ref_ptr = np.concatenate([[0], np.cumsum(nref)])
        passages = csr_matrix((np.ones(len(ref_seg)), ref_seg, ref_ptr), shape=(n, len(seg_tokens)))
        sums = np.asarray(passages @ seg_sums)
    else:
        entry_tok = spans(starts(seg_tokens)[ref_seg], width)
        sums = _ordered_sums(matrix, tokens[entry_tok], np.repeat(np.arange(n), per), per)
    squares = sums.astype(np.float32).astype(np.float64)
    squares *= squares
    if n and squares.shape[1]:  # a running sum: column after column, as C adds them
        out: NDArray[np.float32] = np.sqrt(np.add.accumulate(squares, axis=1, out=squares)[:, -1])
        return out.astype(np.float32)
    return np.zeros(n, dtype=np.float32)


_SPARSE_FROM = 4_096  # passage tokens from which _norms sums with one sparse product
_FLOAT16_TOP: dict[int, tuple[NDArray[np.float32], float | None]] = {}


def _float16_top(matrix: NDArray[np.float32]) -> float | None:
    """The largest magnitude in ``matrix`` if all its values are float16 values, else None
    (computed once per matrix: the loaded matrices are shared and read-only)."""
    found = _FLOAT16_TOP.get(id(matrix))
    if found is None or found[0] is not matrix:
        with np.errstate(over="ignore"):
            exact = bool(np.array_equal(matrix.astype(np.float16).astype(np.float32), matrix))
        found = (matrix, float(np.abs(matrix).max(initial=0.0)) if exact else None)
        if len(_FLOAT16_TOP) >= 4:
            _FLOAT16_TOP.clear()
        _FLOAT16_TOP[id(matrix)] = found
    return found[1]


def _ordered_sums(
    matrix: NDArray[np.float32], tokens: NDArray[np.int64], owner: NDArray[np.int64], per: NDArray[np.int64]
) -> NDArray[np.float64]:
    """Each passage's rows added one after the other in float64 (one step per token rank, all
    passages at once)."""
    n = len(per)
    sums = np.zeros((n, matrix.shape[1]), dtype=np.float64)  # passages, longest first
    if not len(owner):
        return sums
    longest = np.argsort(-per, kind="stable")
    first = starts(per)[longest]
    desc = -per[longest]
    for k in range(int(per.max())):
        m = int(np.searchsorted(desc, -k, side="left"))  # the passages of more than k tokens
        sums[:m] += matrix.take(tokens[first[:m] + k], axis=0)
    out = np.empty_like(sums)
    out[longest] = sums
    return out


_EMPTY = PassageSketch(
    np.zeros(0, np.uint16), np.zeros(0, np.uint16), np.zeros(0, np.uint8), np.zeros(0, np.uint8),
    np.zeros(0, np.float32),
)  # fmt: skip


def token_scores(emb: StaticEmbedder, query: str | Any, token_ids: Any) -> NDArray[np.float32]:
    """``E_t·q`` for each token id, ``q`` the query's unit embedding (all 0 when the query
    embeds to nothing); ``query`` is its text or its embedding (as ``embed([query])[0]`` gives
    it: a search passes the vector it computed), one gather of the distinct rows
    (:func:`goclaw_search.passage_sketches.token_dots`)."""
    ids = np.asarray(token_ids).reshape(-1)  # uint16 ids index as they are
    q = emb._unit_query(query) if isinstance(query, str) else _unit(query)
    matrix = emb._matrix
    if q is None or matrix is None or not len(ids):
        return np.zeros(len(ids), dtype=np.float32)
    return token_dots(matrix, q, ids)


def _unit(vector: Any) -> NDArray[np.float32] | None:
    """A query embedding scaled to norm 1, as ``StaticEmbedder._unit_query`` scales it; None if 0."""
    vec = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(vec))
    unit = vec / np.float32(norm) if norm else vec
    return unit if unit.any() else None
