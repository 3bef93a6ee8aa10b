"""Absolute answer scores: whether a hit answers a message at all, not how it ranks.

A search's own scores rank well but do not say whether anything answers: the memory fusion
divides BM25 by the query's best match, so the best hit of any message sharing one word scores
high. Auto-injection (which must inject nothing for a question memory cannot answer) and the
episodic tier therefore score on one absolute scale:

    score = TEXT_WEIGHT × coverage + VECTOR_WEIGHT × max(cosine, 0)

``coverage`` is the share of the message's distinct retrieval terms
(:func:`goclaw_search.tokenize.query_terms`: stemmed, stopwords dropped, codes whole and by
their parts) a hit holds. A channel with no positive score among the hits considered gives its
weight to the other: the cosine alone when no hit holds any of the terms (so a match in meaning
only can still count), the coverage alone without vectors. The weights are GoClaw's episodic
ones. Why coverage and not an IDF-weighted share, and the thresholds chosen
on the labelled set: docs/consolidation.md, "Choosing the thresholds".

Plain functions over numpy arrays and hit-like objects (or dicts): ``channels`` (``{"vector":
cosine}``), ``terms`` (the query terms' positions or all of the hit's terms, as the memory
backends give them) and ``snippet`` (tokenised when ``terms`` is missing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from goclaw_search.fusion import top_slots
from goclaw_search.tokenize import query_terms, terms

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["TEXT_WEIGHT", "VECTOR_WEIGHT", "answer_scores", "coverage", "fuse_absolute"]

TEXT_WEIGHT = 0.7
VECTOR_WEIGHT = 0.3


def coverage(held: Sequence[Any]) -> NDArray[np.float32] | None:
    """The share of the query terms each document holds: ``held`` is one boolean (or 0/1) array
    per distinct query term over the documents; ``None`` without query terms."""
    if not held:
        return None
    out = np.zeros(len(held[0]), dtype=np.float32)
    for h in held:
        out += np.asarray(h, dtype=np.float32)
    return out / np.float32(len(held))


def fuse_absolute(
    lexical: NDArray[np.float32] | None,
    vector: NDArray[np.float32] | None,
    mask: NDArray[np.bool_] | None,
    limit: int,
) -> list[tuple[int, float]]:
    """``[(slot, score)]`` best first (ties: lower slot first), scores above 0 only:
    ``TEXT_WEIGHT × lexical + VECTOR_WEIGHT × max(cosine, 0)``; a channel with no positive
    score among ``mask`` gives its weight to the other."""
    vec = None if vector is None else np.maximum(vector, np.float32(0.0))

    def positive(x: NDArray[np.float32] | None) -> bool:
        return x is not None and len(x) > 0 and bool(np.any((x > 0) if mask is None else (x > 0) & mask))

    has_lex, has_vec = positive(lexical), positive(vec)
    if not has_lex and not has_vec:
        return []
    tw, vw = (TEXT_WEIGHT, VECTOR_WEIGHT) if has_lex and has_vec else ((1.0, 0.0) if has_lex else (0.0, 1.0))
    size = len(lexical) if lexical is not None else len(vec)  # type: ignore[arg-type]
    fused = np.zeros(size, dtype=np.float32)
    if has_lex and lexical is not None:
        fused += np.float32(tw) * lexical
    if has_vec and vec is not None:
        fused += np.float32(vw) * vec
    slots = top_slots(fused, mask, limit)
    return [(s, float(fused[s])) for s in slots.tolist()]


def _get(hit: Any, name: str) -> Any:
    return hit.get(name) if isinstance(hit, Mapping) else getattr(hit, name, None)


def _held(hit: Any) -> set[str] | Mapping[str, Any]:
    """The retrieval terms a hit holds: its backend's, else its snippet's, tokenised."""
    found = _get(hit, "terms")
    if isinstance(found, Mapping):
        return found
    if found is not None:
        return set(found)
    return set(terms(str(_get(hit, "snippet") or "")))


def answer_scores(message: str, hits: Sequence[Any]) -> list[float]:
    """Each hit's absolute score for ``message`` (see the module docstring), in the hits'
    order; the channel rule is applied over these hits."""
    if not hits:
        return []
    wanted = list(dict.fromkeys(query_terms(message)))
    held = [_held(h) for h in hits]
    lexical = coverage([[t in h for h in held] for t in wanted])
    cosines = [(_get(h, "channels") or {}).get("vector") for h in hits]
    vector = None
    if any(c is not None for c in cosines):
        vector = np.asarray([c or 0.0 for c in cosines], dtype=np.float32)
    out = [0.0] * len(hits)
    for slot, score in fuse_absolute(lexical, vector, None, len(hits)):
        out[slot] = score
    return out
