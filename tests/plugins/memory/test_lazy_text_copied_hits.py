"""A copy of a :class:`LazyHit` made with ``dataclasses.replace`` (a new score, say) is a
LazyHit without its search's texts: the copy read its snippet while copying. ``with_texts`` read
``_texts.gone`` of it and crashed with an AttributeError on ``None``; it now takes the copy as
a plain hit, with the text it read."""

from __future__ import annotations

import dataclasses

from goclaw_memory.hybrid import LazyHit, with_texts
from goclaw_memory.search_rows import ChunkTexts


def test_with_texts_takes_a_replaced_lazy_hit_as_a_plain_hit() -> None:
    reads: list[list[int]] = []

    def read(ids: list[int]) -> dict[int, str]:
        reads.append(sorted(ids))
        return {i: f"text {i}" for i in ids if i != 2}  # chunk 2 deleted since the search

    texts = ChunkTexts(read, [1, 2, 3])
    hits = [LazyHit("a.md", i, i, 1.0, "agent", None, chunk_id=i, texts=texts) for i in (1, 2, 3)]
    copy = dataclasses.replace(hits[0], score=5.0)
    assert type(copy) is LazyHit and copy.snippet == "text 1" and reads == [[1, 2, 3]]
    got = with_texts([copy, hits[1], hits[2]], 3)
    assert [(h.chunk_id, h.snippet, h.score) for h in got] == [(1, "text 1", 5.0), (3, "text 3", 1.0)]
    assert reads == [[1, 2, 3]]  # one query for the search's candidates, the copy's included
