"""Full-text helpers of the PostgreSQL search backend (:mod:`goclaw_memory.pg_backend`):
``tsquery`` literals and BM25 from a chunk's stored terms."""

from __future__ import annotations

from collections.abc import Sequence

K1, B = 1.2, 0.75


def tsquery_literal(terms: Sequence[str], op: str = " | ") -> str:
    """A ``tsquery`` literal of these exact lexemes (cast, never parsed: no normalisation, no
    operators from user input)."""
    return op.join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


def bm25_from_lex(lex: str, terms: Sequence[str], idf: dict[str, float], avgdl: float) -> float:
    """BM25 of one chunk from its stored space-separated terms."""
    words = lex.split(" ") if lex else []
    norm = K1 * (1 - B + B * len(words) / max(avgdl, 1e-9))
    score = 0.0
    for t in terms:
        tf = words.count(t)  # every occurrence, also of a term repeated back to back
        if tf:
            score += idf[t] * tf * (K1 + 1) / (tf + norm)
    return score
