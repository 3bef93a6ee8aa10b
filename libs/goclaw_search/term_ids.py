"""The terms of one text as global term ids, as a tokenizer's term table gives them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["TermIds"]


class TermIds(Sequence[str]):
    """The terms of one text as global term ids (:meth:`Tokenizer.batch`): a sequence of the
    terms (``table[gid]`` for each id), ``lex`` the terms joined by spaces (the form
    ``memory_chunks.lex`` stores). Ids live in ``base[lo:hi]``, one array for a whole batch of
    texts, so :meth:`goclaw_search.index.SearchIndex.upsert` takes a batch's ids at once."""

    __slots__ = ("base", "hi", "lex", "lo", "table")

    def __init__(self, base: NDArray[np.int32], lo: int, hi: int, lex: str, table: list[str]) -> None:
        self.base = base
        self.lo = lo
        self.hi = hi
        self.lex = lex
        self.table = table

    @property
    def ids(self) -> NDArray[np.int32]:
        return self.base[self.lo : self.hi]

    def __len__(self) -> int:
        return self.hi - self.lo

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self.table[g] for g in self.ids[i].tolist()]
        return self.table[int(self.base[self.lo + range(len(self))[i]])]

    def __iter__(self) -> Iterator[str]:
        return map(self.table.__getitem__, self.ids.tolist())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, TermIds)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TermIds({list(self)!r})"
