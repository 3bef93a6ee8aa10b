"""The rows and chunks a memory search returns, made cheaply: the search
contract's frozen dataclasses filled without their ``__init__``, which rows a search without
a reranker needs at all, and rows whose text is read only when something reads it
(:class:`LazyRow`, :class:`ChunkTexts`)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from goclaw.contracts.search import ChunkRow, ScoredChunk, SearchResult
from goclaw_search.fusion import Fused


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


class ChunkTexts:
    """The texts of one search's candidates, read from the database when first wanted: the
    hits returned (:meth:`load` of their ids) or any candidate whose text something reads
    (:meth:`text`: then every candidate not read yet comes in the same query). ``read``
    returns ``{id: text}`` of the ids still stored; an id it leaves out was deleted since the
    search (:meth:`gone`; its text reads as ``""``)."""

    __slots__ = ("_lock", "_pending", "_read", "_texts")

    def __init__(self, read: Callable[[list[int]], Mapping[int, str]], ids: Iterable[int]) -> None:
        self._read = read
        self._pending: dict[int, None] = dict.fromkeys(ids)
        self._texts: dict[int, str] = {}
        self._lock = threading.Lock()

    def text(self, cid: int) -> str:
        found = self._texts.get(cid)
        if found is None:
            self.load(list(self._pending) if cid in self._pending else ())
            found = self._texts.get(cid, "")
        return found

    def load(self, ids: Iterable[int]) -> None:
        """Read the texts of these ids (those not read yet) in one query."""
        with self._lock:
            pending = self._pending
            want = [i for i in ids if i in pending]
            if not want:
                return
            got = self._read(want)
            for i in want:
                del pending[i]
            self._texts.update(got)

    def gone(self, cid: int) -> bool:
        """Whether the chunk's text was read and found deleted."""
        return cid not in self._pending and cid not in self._texts


class LazyRow(ChunkRow):
    """A :class:`ChunkRow` whose ``text`` is read on first use through its search's
    :class:`ChunkTexts` (the SQLite backend's search: the index knows everything else)."""

    @property  # type: ignore[override]
    def text(self) -> str:
        d = self.__dict__
        found: str | None = d.get("_text")
        if found is None:
            found = d["_text"] = d["_texts"].text(d["id"])
        return found

    @text.setter
    def text(self, value: str) -> None:
        self.__dict__["_text"] = value


def lazy_row(cid: int, user: str, path: str, start: int, end: int, texts: ChunkTexts, terms: Any) -> LazyRow:
    row: LazyRow = _new(LazyRow)
    _set(
        row,
        "__dict__",
        {
            "id": cid,
            "user_id": user,
            "path": path,
            "start_line": start,
            "end_line": end,
            "_text": None,
            "_texts": texts,
            "terms": terms,
        },
    )
    return row


class RowBlock:
    """A search's results as the index knows them, one column per field (aligned with its
    chunks): what the memory service builds hits from without a row object per candidate."""

    __slots__ = ("ends", "ids", "paths", "starts", "terms", "texts", "users")

    def __init__(
        self,
        ids: list[int],
        users: list[str],
        paths: list[str],
        starts: list[int],
        ends: list[int],
        terms: Sequence[Any] | None,
        texts: ChunkTexts,
    ) -> None:
        self.ids, self.users, self.paths, self.starts, self.ends = ids, users, paths, starts, ends
        self.terms, self.texts = terms, texts

    def rows(self) -> dict[int, ChunkRow]:
        """The results as the contract's rows (:class:`LazyRow`: their text read when read)."""
        terms = self.terms if self.terms is not None else [None] * len(self.ids)
        texts = self.texts
        return {
            cid: lazy_row(cid, user, path, start, end, texts, t)
            for cid, user, path, start, end, t in zip(
                self.ids, self.users, self.paths, self.starts, self.ends, terms, strict=True
            )
        }


class IndexedResult(SearchResult):
    """A :class:`SearchResult` of rows from the index (:class:`RowBlock`): ``rows`` is made
    when first read (the memory service reads ``block`` instead)."""

    block: RowBlock

    @property  # type: ignore[override]
    def rows(self) -> dict[int, ChunkRow] | None:
        d = self.__dict__
        found: dict[int, ChunkRow] | None = d.get("_rows")
        if found is None:
            found = d["_rows"] = d["block"].rows()
        return found

    @rows.setter
    def rows(self, value: dict[int, ChunkRow] | None) -> None:
        self.__dict__["_rows"] = value


def indexed_result(chunks: list[ScoredChunk], notes: list[str], block: RowBlock) -> IndexedResult:
    result: IndexedResult = _new(IndexedResult)
    result.__dict__.update(chunks=chunks, notes=notes, _rows=None, block=block)
    return result
