"""The memory search-backend contract (issues 11 and 13).

A search backend is selected by name (``[plugins.memory] backend``) from the registry the
``goclaw_search_backends`` hook builds: ``{name: factory(engine) -> SearchBackend}``. The
memory service hands it every write the indexer makes (:meth:`SearchBackend.apply_changes`,
with each chunk's text, terms and vector, so a backend can keep an index of its own) and asks
it queries (:meth:`SearchBackend.search`), then fetches the winning rows
(:meth:`SearchBackend.rows`) and de-duplicates them into hits.

The built-in backends (``sqlite``, ``postgresql``) and the fusion rules they follow are
described in docs/memory.md; :mod:`goclaw.retrieval` holds the shared engine (tokenizer, BM25,
vector top-k, fusion) a backend can build on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Space = tuple[str, str, int]  # (embedding provider, model, dimension)
CHANNELS = ("hybrid", "lexical", "vector")


@dataclass(frozen=True)
class FusionSettings:
    """How the channels are fused (see :mod:`goclaw.retrieval.fusion`)."""

    method: str = "weighted"
    text_weight: float = 0.7
    vector_weight: float = 0.3
    user_boost: float = 1.2


@dataclass(frozen=True)
class SearchQuery:
    """One search: scope, query text and its terms, query vector, channel and fusion."""

    agent_id: str
    users: tuple[str, ...]  # "" = agent level; a user id = that user's own memory
    text: str
    terms: tuple[str, ...]  # goclaw.retrieval.tokenize.query_terms(text)
    vector: Any  # the query's embedding, or None (no vector channel)
    space: Space | None
    limit: int
    channel: str = "hybrid"
    fusion: FusionSettings = field(default_factory=FusionSettings)


@dataclass(frozen=True)
class ScoredChunk:
    """A fused result: chunk id, fused score, and each channel's score (None: not run)."""

    id: int
    score: float
    lexical: float | None = None  # BM25 normalised by the query's best BM25 (0..1)
    vector: float | None = None  # cosine similarity


@dataclass(frozen=True)
class ChunkRow:
    """A stored chunk as the memory service shows it."""

    id: int
    user_id: str
    path: str
    start_line: int
    end_line: int
    text: str
    # The chunk's retrieval terms in order (goclaw.retrieval.tokenize.terms), when the backend
    # stores them: the reranker then reads them instead of tokenising the text again.
    terms: Sequence[str] | None = None


@dataclass
class SearchResult:
    chunks: list[ScoredChunk]
    notes: list[str] = field(default_factory=list)  # what the caller should be told
    # The rows of ``chunks`` when the backend already has them (saves the service a
    # :meth:`SearchBackend.rows` round trip); None: the service asks for them.
    rows: dict[int, ChunkRow] | None = None


@dataclass(frozen=True)
class ChunkRecord:
    """A chunk the indexer wrote: everything a backend needs to index it itself."""

    id: int
    user_id: str
    path: str
    start_line: int
    end_line: int
    text: str
    chunk_hash: str
    terms: Sequence[str]
    space: Space | None = None
    vector: Any = None


@runtime_checkable
class IndexChanges(Protocol):
    """What one indexing run changed for one agent."""

    agent_id: str
    removed: set[int]  # chunk ids deleted
    records: dict[int, ChunkRecord]  # chunk ids written (new or re-embedded), with their data


@runtime_checkable
class SearchBackend(Protocol):
    """A memory search backend. Must never return a chunk outside ``query.agent_id`` /
    ``query.users``."""

    name: str

    def search(self, query: SearchQuery) -> SearchResult:
        """The best ``query.limit`` × 3 chunks (room for the service's de-duplication),
        best first, each scored on both channels when both run."""
        ...

    def rows(self, ids: Sequence[int]) -> dict[int, ChunkRow]:
        """The stored chunks with these ids."""
        ...

    def prepare_vectors(self, dim: int) -> None:
        """Called before vectors of a new dimension are written."""
        ...

    def apply_changes(self, changes: IndexChanges) -> None:
        """Called after every indexing run with what it wrote and removed."""
        ...

    def invalidate(self, agent_id: str | None = None) -> None:
        """Forget any cached state of ``agent_id`` (every agent when None)."""
        ...
