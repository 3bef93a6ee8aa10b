"""The static embedder's passage sketches and token scores (issue 11; the memory reranker's
passage step, docs/memory.md "Passages").

A static model embeds a text as the normalised sum of its tokens' rows, so a passage's cosine
with a unit query ``q`` is ``(Σ_t E_t·q) / ‖Σ_t E_t‖``: :func:`sketch` keeps, per text, its
segments' token ids, which segments make each passage and each passage's norm
(:class:`goclaw.retrieval.passage_sketches.PassageSketch`); :func:`token_scores` gives
``E_t·q`` for a search's tokens with one gather of the distinct rows.

Tokens: a passage's tokens are those of its whitespace-separated pieces (the tokenizer never
joins across whitespace), so each distinct piece of a batch is tokenised once (one
``encode_batch`` call) and remembered in the embedder's bounded piece cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from goclaw.retrieval.passage_sketches import PassageSketch
from goclaw.retrieval.passages import passage_layout

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from goclaw_embeddings.static_model import StaticEmbedder

_BATCH = 256  # texts whose pieces are looked up (and new ones tokenised) together


def _uint(top: int) -> Any:
    """The smallest unsigned type that holds ``0..top``."""
    return np.uint8 if top < 2**8 else np.uint16 if top < 2**16 else np.uint32


def sketches(emb: StaticEmbedder, texts: Sequence[str]) -> list[PassageSketch]:
    """The passage sketch of each text (see the module docstring)."""
    emb.load()
    out: list[PassageSketch] = []
    local: dict[str, list[int]] = {}  # this call's pieces (a bulk load's outgrow the cache)
    for start in range(0, len(texts), _BATCH):
        out.extend(_batch(emb, texts[start : start + _BATCH], local))
    return out


def _batch(emb: StaticEmbedder, texts: Sequence[str], local: dict[str, list[int]]) -> list[PassageSketch]:
    """The sketches of a batch of texts, computed over the whole batch at once (flat arrays of
    its segments, passages and tokens) except one small product per text for the norms."""
    matrix = emb._matrix
    assert matrix is not None
    layouts = [passage_layout(t) for t in texts]
    seg_words = [segment.split() for segments, _p in layouts for segment in segments]
    lookup = emb._piece_lookup(set(chain.from_iterable(seg_words)), local if len(texts) > 1 else None)
    pieces = list(map(lookup.__getitem__, chain.from_iterable(seg_words)))
    per_piece = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    tokens = np.fromiter(chain.from_iterable(pieces), dtype=np.int64, count=int(per_piece.sum()))
    if not len(tokens):
        return [_EMPTY] * len(texts)
    # Segments (every one has a piece: a heading or block line is not blank).
    n_words = np.fromiter(map(len, seg_words), dtype=np.int64, count=len(seg_words))
    seg_tokens = np.zeros(len(seg_words), dtype=np.int64)
    some = n_words > 0
    seg_tokens[some] = np.add.reduceat(per_piece, _starts(n_words)[some])
    known = seg_tokens > 0  # a segment without a known token adds nothing to a passage
    seg_first = _starts(seg_tokens)
    n_segs = np.fromiter((len(segments) for segments, _p in layouts), dtype=np.int64, count=len(texts))
    seg_base = _starts(n_segs).tolist()
    # Passages: their segments (references), flat over the batch.
    ref_seg = np.fromiter(
        (b + i for b, (_s, layout) in zip(seg_base, layouts, strict=True) for p in layout for i in p),
        dtype=np.int64,
    )
    n_pass = np.fromiter((len(layout) for _s, layout in layouts), dtype=np.int64, count=len(texts))
    raw_nref = np.fromiter((len(p) for _s, layout in layouts for p in layout), dtype=np.int64)
    pass_of_ref = np.repeat(np.arange(len(raw_nref)), raw_nref)
    kept = known[ref_seg]
    ref_seg, pass_of_ref = ref_seg[kept], pass_of_ref[kept]
    nref = np.bincount(pass_of_ref, minlength=len(raw_nref))
    # Each passage's norm: its tokens' rows summed, one small product per text.
    width = seg_tokens[ref_seg]
    entry_pass = np.repeat(pass_of_ref, width)
    entry_tok = np.repeat(seg_first[ref_seg] - _starts(width), width) + np.arange(int(width.sum()))
    sums = np.zeros((len(raw_nref), matrix.shape[1]), dtype=np.float32)
    text_of_seg = np.repeat(np.arange(len(texts)), n_segs)
    tok_ends = np.cumsum(np.bincount(text_of_seg, weights=seg_tokens, minlength=len(texts))).astype(np.int64)
    pass_ends = np.cumsum(n_pass)
    entry_ends = np.searchsorted(entry_pass, pass_ends, side="left")
    t0 = p0 = e0 = 0
    for t1, p1, e1 in zip(tok_ends.tolist(), pass_ends.tolist(), entry_ends.tolist(), strict=True):
        if e1 > e0:
            member = np.zeros((p1 - p0, t1 - t0), dtype=np.float32)  # passage x token
            member[entry_pass[e0:e1] - p0, entry_tok[e0:e1] - t0] = 1.0
            sums[p0:p1] = member @ matrix.take(tokens[t0:t1], axis=0)
        t0, p0, e0 = t1, p1, e1
    norms = np.linalg.norm(sums, axis=1).astype(np.float32)
    keep = (nref > 0) & (norms > 0)  # a passage whose tokens cancel out: cosine 0, left out
    keep_ref = keep[pass_of_ref]
    known_before = np.zeros(len(known) + 1, dtype=np.int64)
    np.cumsum(known, out=known_before[1:])
    text_of_ref = np.repeat(np.repeat(np.arange(len(texts)), n_pass), nref)
    local = known_before[ref_seg] - known_before[np.asarray(seg_base, dtype=np.int64)[text_of_ref]]
    # Cut the batch's arrays back into one sketch per text.
    out_tokens = tokens.astype(_uint(matrix.shape[0] - 1))
    seg_len = seg_tokens[known]
    seg_len = seg_len.astype(_uint(int(seg_len.max())))
    refs = local[keep_ref]
    refs = refs.astype(_uint(int(refs.max()) if len(refs) else 0))
    out_nref = nref[keep].astype(np.uint8)
    out_norms = norms[keep]
    text_of_pass = np.repeat(np.arange(len(texts)), n_pass)
    bounds = [tok_ends.tolist()] + [
        np.cumsum(np.bincount(ids, minlength=len(texts))).tolist()
        for ids in (text_of_seg[known], text_of_ref[keep_ref], text_of_pass[keep])
    ]
    out: list[PassageSketch] = []
    lo = [0, 0, 0, 0]
    for k in range(len(texts)):
        hi = [b[k] for b in bounds]
        if hi[3] == lo[3]:
            out.append(_EMPTY)
        else:
            out.append(
                PassageSketch(
                    out_tokens[lo[0] : hi[0]],
                    seg_len[lo[1] : hi[1]],
                    refs[lo[2] : hi[2]],
                    out_nref[lo[3] : hi[3]],
                    out_norms[lo[3] : hi[3]],
                )
            )
        lo = hi
    return out


def _starts(lengths: NDArray[np.int64]) -> NDArray[np.int64]:
    out = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=out[1:])
    return out


_EMPTY = PassageSketch(
    np.zeros(0, np.uint16), np.zeros(0, np.uint16), np.zeros(0, np.uint8), np.zeros(0, np.uint8),
    np.zeros(0, np.float32),
)  # fmt: skip


def token_scores(emb: StaticEmbedder, query: str, token_ids: Any) -> NDArray[np.float32]:
    """``E_t·q`` for each token id, ``q`` the query's unit embedding (all 0 when the query
    embeds to nothing): each distinct row is read once."""
    ids = np.asarray(token_ids).reshape(-1)  # uint16 ids index as they are
    q = emb._unit_query(query)
    matrix = emb._matrix
    if q is None or matrix is None or not len(ids):
        return np.zeros(len(ids), dtype=np.float32)
    seen = np.zeros(matrix.shape[0], dtype=np.bool_)
    seen[ids] = True
    rows = np.flatnonzero(seen)
    dense = np.empty(matrix.shape[0], dtype=np.float32)  # only the rows read are ever read back
    dense[rows] = np.einsum("ij,j->i", matrix.take(rows, axis=0), q)
    scores: NDArray[np.float32] = dense[ids]
    return scores
