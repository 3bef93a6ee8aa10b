"""What one index run changed, as the search backend receives it (:class:`IndexChanges`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from goclaw.contracts.search import ChunkRecord, IndexChanges, Space


@dataclass
class ChangeSet:
    """The chunk rows one index run removed and wrote (:class:`goclaw.contracts.search.IndexChanges`),
    for a backend that keeps an index of its own and patches it instead of reloading."""

    agent_id: str
    space: Space | None = None
    first: str | None = None  # index version token before the run's first write
    last: str | None = None  # ... and after its last one
    chained: bool = True  # False: another process wrote in between
    removed: set[int] = field(default_factory=set)
    records: dict[int, ChunkRecord] = field(default_factory=dict)

    def step(self, tokens: tuple[str, str]) -> None:
        prev, new = tokens
        if self.first is None:
            self.first = prev
        elif prev != self.last:
            self.chained = False
        self.last = new

    def remove(self, ids: Iterable[int]) -> None:
        for i in ids:
            self.records.pop(i, None)  # an id can be reused after its row is deleted
            self.removed.add(i)

    def add(self, records: Iterable[ChunkRecord]) -> None:
        for rec in records:
            self.records[rec.id] = rec

    def record(self, tokens: tuple[str, str], removed: Iterable[int], added: Iterable[ChunkRecord]) -> None:
        """One committed transaction: its version tokens, the ids it removed, the rows it wrote."""
        self.step(tokens)
        self.remove(removed)
        self.add(added)

    def freeze(self) -> IndexChanges:
        """The run's changes as the search contract hands them to the backend."""
        before = self.first or ""
        after = self.last if self.last is not None else before
        return IndexChanges(
            self.agent_id,
            frozenset(self.removed),
            dict(self.records),
            self.space,
            before,
            after,
            self.chained,
        )
