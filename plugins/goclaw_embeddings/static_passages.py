"""The static embedder's passage sketches and token scores, for the memory reranker's passage
step (docs/memory.md "After fusion: reranker, passages, decay and MMR").

A static model embeds a text as the normalised sum of its tokens' rows, so a passage's cosine
with a unit query ``q`` is ``(Σ_t E_t·q) / ‖Σ_t E_t‖``: :func:`sketch` keeps, per text, its
segments' token ids, which segments make each passage and each passage's norm
(:class:`goclaw_search.passage_sketches.PassageSketch`); :func:`token_scores` gives
``E_t·q`` for a search's tokens with one gather of the distinct rows.

Tokens: a passage's tokens are those of its whitespace-separated pieces (the tokenizer never
joins across whitespace), so each distinct piece of a batch is tokenised once (one
``encode_batch`` call) and remembered in the embedder's bounded piece cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from goclaw_search.passage_sketches import PassageSketch, token_dots
from goclaw_search.passages import passage_layout

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from goclaw_embeddings.static_model import StaticEmbedder

_BATCH = 256  # texts whose pieces are looked up (and new ones tokenised) together


def _uint(top: int) -> Any:
    """The smallest unsigned type that holds ``0..top``."""
    return np.uint8 if top < 2**8 else np.uint16 if top < 2**16 else np.uint32


def sketches(emb: StaticEmbedder, texts: Sequence[str]) -> list[PassageSketch]:
    """The passage sketch of each text (see the module docstring), batch after batch: each
    new piece tokenised by the embedder's tokenizer (HF ``tokenizers``), the rest in numpy."""
    emb.load()
    matrix = emb._matrix
    assert matrix is not None
    out: list[PassageSketch] = []
    local: dict[str, list[int]] = {}  # this call's pieces (a bulk load's outgrow the cache)
    for start in range(0, len(texts), _BATCH):
        part = texts[start : start + _BATCH]
        out.extend(_cut(len(part), _flat(emb, part, local), matrix.shape[0]))
    return out


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


def _flat(emb: StaticEmbedder, texts: Sequence[str], local: dict[str, list[int]]) -> _Flat:
    """The sketches of a batch, computed over the whole batch at once (flat arrays
    of its segments, passages and tokens)."""
    matrix = emb._matrix
    assert matrix is not None
    layouts = [passage_layout(t) for t in texts]
    seg_words = [segment.split() for segments, _p in layouts for segment in segments]
    lookup = emb._piece_lookup(set(chain.from_iterable(seg_words)), local if len(texts) > 1 else None)
    pieces = list(map(lookup.__getitem__, chain.from_iterable(seg_words)))
    per_piece = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    tokens = np.fromiter(chain.from_iterable(pieces), dtype=np.int64, count=int(per_piece.sum()))
    # Segments (every one has a piece: a heading or block line is not blank).
    n_words = np.fromiter(map(len, seg_words), dtype=np.int64, count=len(seg_words))
    seg_tokens = np.zeros(len(seg_words), dtype=np.int64)
    some = n_words > 0
    seg_tokens[some] = np.add.reduceat(per_piece, _starts(n_words)[some])
    known = seg_tokens > 0  # a segment without a known token adds nothing to a passage
    seg_first = _starts(seg_tokens)
    n_segs = np.fromiter((len(segments) for segments, _p in layouts), dtype=np.int64, count=len(texts))
    seg_base = _starts(n_segs)
    # Passages: their segments (references), flat over the batch.
    ref_seg = np.fromiter(
        (
            b + i
            for b, (_s, layout) in zip(seg_base.tolist(), layouts, strict=True)
            for p in layout
            for i in p
        ),
        dtype=np.int64,
    )
    n_pass = np.fromiter((len(layout) for _s, layout in layouts), dtype=np.int64, count=len(texts))
    raw_nref = np.fromiter((len(p) for _s, layout in layouts for p in layout), dtype=np.int64)
    pass_of_ref = np.repeat(np.arange(len(raw_nref)), raw_nref)
    kept = known[ref_seg]
    ref_seg, pass_of_ref = ref_seg[kept], pass_of_ref[kept]
    nref = np.bincount(pass_of_ref, minlength=len(raw_nref))
    # Each passage's tokens, in order: its segments' (headings, then its block).
    width = seg_tokens[ref_seg]
    entry_pass = np.repeat(pass_of_ref, width)
    entry_tok = np.repeat(seg_first[ref_seg] - _starts(width), width) + np.arange(int(width.sum()))
    norms = _norms(matrix, tokens[entry_tok], entry_pass, len(raw_nref))
    keep = (nref > 0) & (norms > 0)  # a passage whose tokens cancel out: cosine 0, left out
    keep_ref = keep[pass_of_ref]
    known_before = np.zeros(len(known) + 1, dtype=np.int64)
    np.cumsum(known, out=known_before[1:])
    text_of_ref = np.repeat(np.repeat(np.arange(len(texts)), n_pass), nref)
    local_ref = known_before[ref_seg] - known_before[seg_base[text_of_ref]]
    text_of_seg = np.repeat(np.arange(len(texts)), n_segs)
    text_of_pass = np.repeat(np.arange(len(texts)), n_pass)
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


def _norms(
    matrix: NDArray[np.float32], tokens: NDArray[np.int64], owner: NDArray[np.int64], n: int
) -> NDArray[np.float32]:
    """``‖Σ_t E_t‖`` of each of ``n`` passages, ``owner[i]`` the passage of ``tokens[i]`` (in
    passage order), in a fixed order of operations: each passage's rows added one
    after the other in float64, the sums rounded to float32, their squares (exact in float64)
    added column after column.

    When every row value is a float16 value (a model quantised to float16, as the bundled one)
    and no passage is long enough to reach 2**29 in a column, each float64 sum of those values is
    exact whatever the order: the values are multiples of 2**-24, so every partial sum is a
    multiple of 2**-24 below 2**29, which float64's 53 bits hold. The sums are then one sparse
    product (counts of each distinct token per passage times its rows), the same numbers as the
    token-after-token loop (:func:`_ordered_sums`) that runs otherwise or for a few tokens."""
    per = np.bincount(owner, minlength=n)
    top = _float16_top(matrix)
    if len(owner) >= _SPARSE_FROM and top is not None and int(per.max()) * top < 2.0**29:
        from scipy.sparse import csr_matrix

        rows, inverse = np.unique(tokens, return_inverse=True)
        counts = csr_matrix((np.ones(len(tokens)), (owner, inverse)), shape=(n, len(rows)))
        sums = np.asarray(counts @ matrix.take(rows, axis=0).astype(np.float64))
    else:
        sums = _ordered_sums(matrix, tokens, owner, per)
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
    first = _starts(per)[longest]
    desc = -per[longest]
    for k in range(int(per.max())):
        m = int(np.searchsorted(desc, -k, side="left"))  # the passages of more than k tokens
        sums[:m] += matrix.take(tokens[first[:m] + k], axis=0)
    out = np.empty_like(sums)
    out[longest] = sums
    return out


def _starts(lengths: NDArray[np.int64]) -> NDArray[np.int64]:
    out = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=out[1:])
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
