"""What the two episodic search paths share (:mod:`goclaw_episodic.search` for SQLite,
:mod:`goclaw_episodic.search_pg` for PostgreSQL): the stored terms of a summary, the fusion
weights and the scores.

**The score is absolute**, so one threshold (``auto_inject_threshold``) means the same for every
query and every agent: ``0.7 × coverage + 0.3 × cosine``, where ``coverage`` is the share of the
query's distinct terms a summary holds (stemmed, stopwords dropped; a code counts whole and by
its parts). A channel with no positive score in scope gives its weight to the other, as in the
memory fusion. The first version normalised BM25 by the query's best match, so the best lexical
match scored 0.7 or more whatever it matched: every question sharing one word with any summary
injected it. Weighting the terms by their IDF among the summaries separated unanswerable
questions a little better on a large history, but misjudges the usual small one: when every
summary is about the project asked about, its name weighs nothing and a verb of the question
weighs most (docs/consolidation.md, "Auto-injection").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from goclaw.retrieval.fusion import top_slots
from goclaw.retrieval.tokenize import default_tokenizer

if TYPE_CHECKING:
    from numpy.typing import NDArray

# The reference's episodic weights (spec §17): text 0.7, vector 0.3.
TEXT_WEIGHT = 0.7
VECTOR_WEIGHT = 0.3
Space = tuple[str, str, int]  # (provider, model, dimension) of an embedding space


def episode_lex(summary: str, l0_abstract: str, key_topics: Sequence[str] | None) -> str:
    """The stored terms of a summary (``episodic_summaries.lex``; migration 0004 computes the
    same): summary, L0 abstract and key topics through the shared tokenizer."""
    joined = "\n".join([summary or "", l0_abstract or "", " ".join(str(t) for t in key_topics or [])])
    return " ".join(default_tokenizer().terms(joined))


def topics(value: Any) -> list[str]:
    """``key_topics`` as a list, whether the driver gave a list or JSON text."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return [value]
    return [str(t) for t in value] if isinstance(value, list) else []


def coverage(held: Sequence[Any]) -> Any:
    """The share of the query terms each summary holds: ``held`` is one boolean (or 0/1) array
    per distinct query term over the summaries; ``None`` without query terms."""
    if not held:
        return None
    out = np.zeros(len(held[0]), dtype=np.float32)
    for h in held:
        out += np.asarray(h, dtype=np.float32)
    return out / np.float32(len(held))


def fuse_scores(
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
    fused = np.zeros(len(lexical if lexical is not None else vec), dtype=np.float32)  # type: ignore[arg-type]
    if has_lex and lexical is not None:
        fused += np.float32(tw) * lexical
    if has_vec and vec is not None:
        fused += np.float32(vw) * vec
    slots = top_slots(fused, mask, limit)
    return [(s, float(fused[s])) for s in slots.tolist()]
