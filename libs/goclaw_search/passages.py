"""Passages of a memory chunk and the reranker's passage step (it lets hybrid beat full
text at 100k chunks: docs/decisions.md, "The reranker re-measures the best 20 hits").

A chunk of notes (up to 1,000 characters) holds several facts, and its one mean vector blurs the
fact a query asks about among the others: at 100,000 chunks the answer's chunk was often no
closer to the query than a chunk that merely shares its topic. A **passage** is one list item or
paragraph with the Markdown headings above it in the chunk (its context: the day, the topic); the
passage step scores the best few hits' vector share on their best passage instead of the whole
chunk. Only an embedder that can embed passages cheaply offers it (the bundled static model, in
microseconds); a hosted one is never called per passage.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["best_passage_cosine", "passage_layout", "passage_scores", "passages"]

# Markdown structure: a code fence (its marker), a heading (its hashes) or the start of a list
# item; after at most 3 spaces, which no alternative starts with, so at most one matches.
_LINE = re.compile(r"\s{0,3}(?:(```|~~~)|(#{1,6})\s|(?:[-*+]|\d{1,9}[.)])\s)")


def passages(text: str) -> list[str]:
    """The passages of a Markdown chunk: each list item (with its continuation lines), each
    paragraph and each fenced code block, preceded by the headings above it within the chunk
    (``# day`` then ``## topic``), so a line keeps the context that says what it is about. A
    chunk of headings only gives its headings."""
    segments, layout = passage_layout(text)
    return ["\n".join([segments[i] for i in p]) for p in layout]


def passage_layout(text: str) -> tuple[list[str], list[tuple[int, ...]]]:
    """:func:`passages` as *segments* (each heading line, stripped, and each block of lines)
    and, per passage, the indices of the segments it joins with newlines (its headings, then
    its block): a heading above several passages is one segment, which the passage sketches
    (:mod:`goclaw_search.passage_sketches`) keep once."""
    segments: list[str] = []
    out: list[tuple[int, ...]] = []
    heads: list[tuple[int, int]] = []  # the open headings (level, segment), outermost first
    above: tuple[int, ...] = ()  # their segments
    block: list[str] = []
    fence = ""  # the open code fence's marker: its lines (a "# comment" too) are plain text
    headings: list[int] = []
    match = _LINE.match
    add, put = segments.append, out.append
    for line in text.splitlines():
        m = match(line)
        if fence:
            block.append(line)
            if m is not None and m.group(1) == fence:
                fence = ""
                add("\n".join(block))
                block = []
                put((*above, len(segments) - 1))
            continue
        if m is None:  # a plain line, or a blank one
            if not line or line.isspace():
                if block:
                    add("\n".join(block))
                    block = []
                    put((*above, len(segments) - 1))
            else:
                block.append(line)
            continue
        if block:  # a fence, heading or list item starts a block
            add("\n".join(block))
            put((*above, len(segments) - 1))
        kind = m.lastindex  # None: a list item; 1: a fence; 2: a heading
        if kind is None:
            block = [line]
        elif kind == 1:
            fence = m.group(1)
            block = [line]
        else:
            level = m.end(2) - m.start(2)
            heads = [(lv, i) for lv, i in heads if lv < level]
            add(line.strip())
            heads.append((level, len(segments) - 1))
            above = tuple(i for _level, i in heads)
            headings.append(len(segments) - 1)
            block = []
    if block:
        segments.append("\n".join(block))
        out.append((*above, len(segments) - 1))
    return segments, out or [(i,) for i in headings]


def best_passage_cosine(
    embed: Callable[[list[str]], NDArray[np.float32]], query: str, texts: Sequence[str]
) -> NDArray[np.float32]:
    """For each text, the best cosine between ``query`` and one of its :func:`passages` (0 when
    none is positive); ``embed`` returns unit (or zero) rows, one call for everything."""
    best = np.zeros(len(texts), dtype=np.float32)
    found: list[str] = []
    owners: list[int] = []
    for i, text in enumerate(texts):
        for p in passages(text):
            found.append(p)
            owners.append(i)
    if not found:
        return best
    vectors = np.asarray(embed([query, *found]), dtype=np.float32)
    np.maximum.at(best, np.asarray(owners, dtype=np.int64), vectors[1:] @ vectors[0])
    return best


def passage_scores(
    scores: Sequence[float],
    channels: Sequence[Mapping[str, float]],
    passage: Sequence[float],
    text_weight: float,
    vector_weight: float,
) -> list[float]:
    """Scores with the vector share of the weighted fusion measured on the best passage:
    ``score × (tw × lexical + vw × max(vector, passage)) / (tw × lexical + vw × vector)``, where
    ``lexical`` and ``vector`` are a hit's channel scores (BM25 / best BM25 and the chunk's
    cosine) and ``passage`` the cosine of its best passage; the chunk itself counts as a
    passage, so a score never goes down. Every other factor of the score (the overlap
    reranker's, a user boost) is kept. A hit without both channels, or whose fused share is not
    positive, keeps its score."""
    out: list[float] = []
    bests = passage.tolist() if isinstance(passage, np.ndarray) else passage  # no numpy scalars
    for score, ch, best in zip(scores, channels, bests, strict=True):
        lexical, vector = ch.get("lexical"), ch.get("vector")
        if lexical is None or vector is None:
            out.append(score)
            continue
        before = text_weight * lexical + vector_weight * vector
        after = text_weight * lexical + vector_weight * max(vector, best)
        out.append(score * after / before if before > 0 else score)
    return out
