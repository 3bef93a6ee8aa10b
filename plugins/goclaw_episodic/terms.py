"""What the two episodic search paths share (:mod:`goclaw_episodic.search` for SQLite,
:mod:`goclaw_episodic.search_pg` for PostgreSQL): the stored terms of a summary, the fusion
weights and the text score (BM25 × the share of query terms a summary contains)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from goclaw.retrieval.tokenize import default_tokenizer

# The reference's episodic weights (spec §17): text 0.7, vector 0.3.
TEXT_WEIGHT = 0.7
VECTOR_WEIGHT = 0.3
K1, B = 1.2, 0.75
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


def covered_bm25(doc: list[str], terms: Sequence[str], idf: Sequence[float], avgdl: float) -> float:
    """BM25 of one summary's terms × the share of the query terms it contains."""
    if not doc or not terms:
        return 0.0
    tf = Counter(doc)
    norm = K1 * (1 - B + B * len(doc) / max(avgdl, 1e-9))
    score, covered = 0.0, 0
    for t, w in zip(terms, idf, strict=True):
        f = tf.get(t, 0)
        if f:
            covered += 1
            score += w * f * (K1 + 1) / (f + norm)
    return score * covered / len(terms)
