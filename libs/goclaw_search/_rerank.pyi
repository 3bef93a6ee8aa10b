"""Types of the optional C reranker steps (``_rerank.c``); see libs/goclaw_search/rerank.py,
forward.py and passage_sketches.py, whose numpy paths give the same figures."""

from typing import Any

ABI: int

def overlap_features(terms: Any, ptr: Any, slots: Any, qids: Any) -> tuple[list[int], list[int]]:
    """(matched, window) of the distinct query term ids ``qids`` (int64) in each slot (int64)
    of a forward index (``terms`` int32, ``ptr`` int64)."""
    ...

def sketch_select(
    tokens: Any, layout: Any, counts: Any, has: Any, ptr: Any, slots: Any
) -> tuple[bytes, bytes, bytes, bytes, bytes, bytes, bytes]:
    """A SketchBatch's arrays (tokens u2, seg_len u2, refs i8, nref u2, norms f4, n_pass i8,
    has bool) for these slots (int64) of a PassageSketches store."""
    ...

def sketch_best(seg_len: Any, refs: Any, nref: Any, norms: Any, n_pass: Any, scores: Any) -> bytes:
    """Each text's best passage cosine (float32) from a SketchBatch's arrays (u2, i8, u2, f4, i8)
    and its token scores (f4)."""
    ...

def sketch_scores(
    tokens: Any, layout: Any, counts: Any, has: Any, ptr: Any, slots: Any, matrix: Any, q: Any
) -> tuple[bytes, bytes]:
    """(best passage cosine f4, has a sketch bool) of each slot (int64) of a PassageSketches
    store, its token scores the float32 ``matrix`` rows dot ``q``: sketch_select, token_dots and
    sketch_best in one call."""
    ...

def token_dots(matrix: Any, q: Any, ids: Any) -> bytes:
    """``matrix[id] · q`` (float32) for each id (uint16 or int64); float32 matrix and q."""
    ...
