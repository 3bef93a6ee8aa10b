"""The rows and chunks a memory search returns, made cheaply (issue 11 speed): the search
contract's frozen dataclasses filled without their ``__init__``, and which rows a search without
a reranker needs at all."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from goclaw.contracts.search import ChunkRow, ScoredChunk
from goclaw.retrieval.fusion import Fused


def chunk_row(r: Sequence[Any], positions: Mapping[int, Mapping[str, Sequence[int]]] | None) -> ChunkRow:
    """A ``(id, user_id, path, start_line, end_line, text, lex)`` row as a :class:`ChunkRow`,
    its terms the query terms' positions when given, else the stored ``lex``."""
    cid = int(r[0])
    terms = positions.get(cid) if positions is not None else r[6].split() if r[6] else None
    return make_row(cid, r[1], r[2], int(r[3]), int(r[4]), r[5], terms)


def _plain(cls: type, names: tuple[str, ...]) -> bool:
    """Whether ``cls`` is a dataclass of exactly these fields with nothing run on creation
    (no slots, no ``__post_init__``): then :func:`make_row` / :func:`make_scored` may fill its
    ``__dict__`` at once instead of calling its frozen ``__init__``, which sets each field
    through ``object.__setattr__`` (0.9 -> 0.4 us a row; 60 rows and chunks a search)."""
    return (
        dataclasses.is_dataclass(cls)
        and tuple(f.name for f in dataclasses.fields(cls)) == names
        and not hasattr(cls, "__slots__")
        and not hasattr(cls, "__post_init__")
    )


_new, _set = object.__new__, object.__setattr__
_FAST_ROW = _plain(ChunkRow, ("id", "user_id", "path", "start_line", "end_line", "text", "terms"))
_FAST_SCORED = _plain(ScoredChunk, ("id", "score", "lexical", "vector"))


def make_row(cid: int, user: str, path: str, start: int, end: int, text: str, terms: Any) -> ChunkRow:
    """``ChunkRow(cid, user, path, start, end, text, terms)``, made faster (see :func:`_plain`)."""
    if not _FAST_ROW:
        return ChunkRow(cid, user, path, start, end, text, terms)
    row: ChunkRow = _new(ChunkRow)
    _set(
        row,
        "__dict__",
        {
            "id": cid,
            "user_id": user,
            "path": path,
            "start_line": start,
            "end_line": end,
            "text": text,
            "terms": terms,
        },
    )
    return row


def make_scored(cid: int, score: float, lexical: float | None, vector: float | None) -> ScoredChunk:
    """``ScoredChunk(cid, score, lexical, vector)``, made faster (see :func:`_plain`)."""
    if not _FAST_SCORED:
        return ScoredChunk(cid, score, lexical, vector)
    chunk: ScoredChunk = _new(ScoredChunk)
    _set(chunk, "__dict__", {"id": cid, "score": score, "lexical": lexical, "vector": vector})
    return chunk


def scored_chunks(ids: Sequence[int], fused: Fused) -> list[ScoredChunk]:
    """The fused results as the search contract's chunks, best first."""
    lex, vec = fused.lexical, fused.vector
    none = [None] * len(ids)
    return list(
        map(make_scored, ids, fused.scores, none if lex is None else lex, none if vec is None else vec)
    )


def shown(ids: list[int], scores: Sequence[float], limit: int, one_scope: bool) -> list[int]:
    """The results whose rows a search without a reranker can show: with one scope among
    them only same-line pieces of one long line can collapse in de-duplication, so the first
    ``limit`` and any tied with the last of them (ties are ordered by path afterwards); the
    memory service fetches the others only when de-duplication leaves fewer than ``limit``."""
    if not one_scope or limit < 1 or len(ids) <= limit:
        return ids
    end = limit
    while end < len(ids) and scores[end] == scores[limit - 1]:
        end += 1
    return ids[:end]
