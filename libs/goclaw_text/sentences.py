"""Sentences and clipping: the deterministic text primitives every memory feature shares
(episodic abstracts, KG extraction, the Memory Context section). Pure functions, no model."""

from __future__ import annotations

import re

__all__ = ["clip", "sentences"]

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+")
_ABBREV = re.compile(r"(?<![\w.])(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|Mt|vs|etc|e\.g|i\.e)\.$", re.I)


def clip(text: str, limit: int, suffix: str = "...") -> str:
    """At most ``limit`` characters (code points), cut on a word boundary when possible."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - len(suffix))]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + suffix


def sentences(text: str) -> list[str]:
    out: list[str] = []
    for para in re.split(r"\n\s*\n|\n[-*•]\s+|\n", text):
        pieces: list[str] = []
        for piece in _SENTENCE_SPLIT.split(para.strip()):
            if pieces and _ABBREV.search(pieces[-1]):
                pieces[-1] += " " + piece  # "Dr. Patel" is one sentence
            else:
                pieces.append(piece)
        for s in pieces:
            s = s.strip().lstrip("-*• ").strip()
            if s:
                out.append(s)
    return out
