"""The memory search-backend contract.

A search backend is selected by name (``[plugins.memory] backend``) from the registry the
``goclaw_search_backends`` hook builds: ``{name: factory(engine) -> SearchBackend}``. The
memory service owns the index (its chunk table, the source of truth); the backend keeps
whatever it searches. The service's calls, in order:

1. :meth:`SearchBackend.open` once, right after the factory, with an :class:`IndexSource`:
   read-only access to the service's index (each agent's version token, chunk fingerprints
   and full records), which is how a backend that fell behind catches up;
2. per indexing run, :meth:`SearchBackend.prepare_vectors` before vectors of a dimension are
   written, then :meth:`SearchBackend.apply_changes` with everything the run wrote and removed
   (:class:`IndexChanges`: each chunk's text, terms and vector, plus the version tokens before
   and after), so a backend can keep an index of its own; :meth:`SearchBackend.bulk_load`
   around a large load (``goclaw memory index --bulk``);
3. per query, :meth:`SearchBackend.search`, then :meth:`SearchBackend.rows` for the winners
   (unless the result carries them), de-duplicated into hits by the service;
4. :meth:`SearchBackend.invalidate` when an agent's chunks changed outside an indexing run
   (``goclaw forget``, ``goclaw memory doctor --repair``);
5. :meth:`SearchBackend.close` when the engine closes.

Subclass :class:`SearchBackend` explicitly to inherit the no-op defaults of ``open``,
``prepare_vectors``, ``bulk_load`` and ``close``; ``tests/third_party/goclaw-minisearch`` is a
complete backend in pure Python written against this module alone.

The built-in backends (``sqlite``, ``postgresql``) and the fusion rules they follow are
described in docs/memory.md; :mod:`goclaw_search` holds the shared engine (tokenizer, BM25,
vector top-k, fusion) a backend can build on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

Space = tuple[str, str, int]  # (embedding provider, model, dimension)
CHANNELS = ("hybrid", "lexical", "vector")


@dataclass(frozen=True)
class FusionSettings:
    """How the channels are fused (see :mod:`goclaw_search.fusion`)."""

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
    terms: tuple[str, ...]  # goclaw_search.tokenize.query_terms(text)
    vector: Any  # the query's embedding, or None (no vector channel)
    space: Space | None
    limit: int  # hits the caller will show
    channel: str = "hybrid"
    fusion: FusionSettings = field(default_factory=FusionSettings)
    # Fused chunks to return, best first (more than shown: room to de-duplicate and rerank).
    candidates: int = 0  # 0: 3 × limit (what backends returned before)
    # Whether a reranker reads ``ChunkRow.terms`` (False: a backend may leave them out).
    rerank_terms: bool = True
    filter: Any = None  # only chunks a goclaw_search.facets.SearchFilter matches (None: all)
    term_counts: tuple[int, ...] = ()  # how often each of ``terms`` is in the query (empty: once each)

    def counts(self) -> tuple[int, ...]:
        """``term_counts``, or once each when they do not match ``terms`` (a query rewritten
        with new terms but not their counts)."""
        n = len(self.terms)
        return self.term_counts if len(self.term_counts) == n else (1,) * n

    @property
    def wanted(self) -> int:
        """How many fused chunks a backend returns at most: ``candidates`` or 3 × ``limit``."""
        return max(self.candidates, self.limit) if self.candidates else 3 * self.limit


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
    # When the backend has them: the chunk's retrieval terms in order
    # (goclaw_search.tokenize.terms), or the positions of the query's terms in it
    # ({term: [position, ...]}, terms it lacks left out). The reranker then reads them instead
    # of tokenising the text again.
    terms: Sequence[str] | Mapping[str, Sequence[int]] | None = None


@dataclass
class SearchResult:
    chunks: list[ScoredChunk]
    notes: list[str] = field(default_factory=list)  # what the caller should be told
    # The rows of ``chunks`` when the backend has them (None: the service asks ``rows``).
    rows: dict[int, ChunkRow] | None = None


@dataclass(frozen=True)
class ChunkRecord:
    """A chunk as the memory service indexed it: everything a backend needs to index it itself.

    ``terms`` are :func:`goclaw_search.tokenize.default_tokenizer`'s terms of ``text`` (search
    them, so lexical matching is the kernel's); ``vector`` is a float32 array of ``space``, or
    None (no embedder, or not embedded yet) and then ``space`` is None too."""

    id: int
    user_id: str  # "" = agent level
    path: str
    start_line: int
    end_line: int
    text: str
    chunk_hash: str
    terms: Sequence[str]
    space: Space | None = None
    vector: Any = None


class ChunkFingerprint(NamedTuple):
    """What a backend must hold for one chunk to be in step with the service's index (compare
    it with the same tuple built from what you store; equal tuples = nothing to fetch)."""

    chunk_hash: str
    user_id: str
    path: str
    start_line: int
    has_vector: bool  # the chunk has a vector of the space asked for


@dataclass(frozen=True)
class IndexChanges:
    """What one indexing run of one agent wrote and removed (:meth:`SearchBackend.apply_changes`).

    Every transaction that changes an agent's chunks replaces the agent's *version token*
    (:meth:`IndexSource.version`); ``version_before`` is the token before the run's first write
    ("" when the agent was never indexed) and ``version_after`` the token after its last one.
    ``complete`` is True when no other writer changed the agent's chunks in between: then
    ``removed`` and ``records`` are exactly the difference between the two versions, and a
    backend that holds ``version_before`` reaches ``version_after`` by applying them. Otherwise
    (``complete`` False, or you hold another version) catch up from the :class:`IndexSource`.
    An id can be in both ``removed`` and ``records`` (a re-embedded chunk): remove, then add.
    """

    agent_id: str
    removed: frozenset[int] = frozenset()
    records: Mapping[int, ChunkRecord] = field(default_factory=dict)
    space: Space | None = None  # the run's embedding space (None: it ran without an embedder)
    version_before: str = ""
    version_after: str = ""
    complete: bool = True


@runtime_checkable
class IndexSource(Protocol):
    """Read-only access to the memory service's index, the source of truth a backend catches up
    from (given to :meth:`SearchBackend.open`). Thread-safe; every call reads the database."""

    def version(self, agent_id: str) -> str:
        """The agent's current version token ("" before its first indexing run). Cheap (one
        primary-key read): call it per search to notice writes another process made."""
        ...

    def fingerprints(self, agent_id: str, space: Space | None) -> dict[int, ChunkFingerprint]:
        """Every chunk of the agent, by id, with what a backend must hold for it
        (``has_vector``: the chunk has a vector of ``space``)."""
        ...

    def records(self, agent_id: str, ids: Sequence[int], space: Space | None) -> Iterator[ChunkRecord]:
        """The agent's chunks with these ids (ids of other agents or gone are skipped), each with
        its vector only when it is of ``space``."""
        ...


@runtime_checkable
class PassageCosineBackend(Protocol):
    """Optional, beside :class:`SearchBackend`: :meth:`SearchBackend.chunk_sketches` scored in
    one call. The memory reranker's passage step asks a backend that offers it for each
    chunk's best passage cosine with the query, given the embedder's token rows (``matrix``:
    float32, one row ``E_t`` per token id, from an embedder that offers ``token_rows()``, see
    :class:`goclaw.contracts.providers.PassageSketchingEmbedder`) and the query's unit
    embedding ``q``. Returns ``(best, has)``: float32 cosines and booleans (whether the chunk
    had a sketch; those without are scored from their text), one each per id, ``-1`` having
    none; or None (no such index loaded: the step reads the sketches, then scores them)."""

    def passage_cosines(
        self, agent_id: str, ids: Sequence[int], space: Space, matrix: Any, q: Any
    ) -> Any: ...


@runtime_checkable
class SearchBackend(Protocol):
    """A memory search backend (see the module docstring for the order of calls). It must never
    return a chunk outside ``query.agent_id`` / ``query.users``."""

    name: str
    filters: bool = False  # whether search applies ``query.filter`` before ranking (else none comes)

    def open(self, source: IndexSource) -> None:
        """Called once, right after the factory, before any other method: keep ``source`` to
        catch up when your index is behind (:meth:`IndexSource.version` moved without an
        :meth:`apply_changes` you saw: another process indexed, a crash between the database
        commit and ``apply_changes``, the backend was not selected while indexing ran)."""
        return None

    def search(self, query: SearchQuery) -> SearchResult:
        """The best ``query.wanted`` chunks (room for the service's de-duplication and
        reranking), best first, each scored on both channels when both run
        (``ScoredChunk.lexical`` 0.0, not None, for a chunk without a query term). Search
        ``query.terms`` (not the text), use ``query.vector`` only with ``query.space``, and fuse
        as ``query.fusion`` says. Say what the caller should know in ``notes`` (e.g. no chunk
        has a vector of ``query.space``)."""
        ...

    def rows(self, agent_id: str, ids: Sequence[int]) -> dict[int, ChunkRow]:
        """The agent's stored chunks with these ids (ids of another agent are left out)."""
        ...

    def prepare_vectors(self, dim: int) -> None:
        """Called before vectors of dimension ``dim`` are written (e.g. to create an index)."""
        return None

    def bulk_load(self, dim: int) -> AbstractContextManager[None]:
        """A context around a large load of ``dim``-dimension vectors (``memory index --bulk``),
        e.g. to drop a vector index and build it once at the end. Default: nothing."""
        return nullcontext()

    def apply_changes(self, changes: IndexChanges) -> None:
        """Called after every indexing run of an agent (also one that changed nothing) with what
        it wrote and removed; after it returns, searches must see the run's writes."""
        ...

    def invalidate(self, agent_id: str | None = None) -> None:
        """The agent's chunks (every agent's when None) changed outside an indexing run
        (``forget`` erased rows, ``memory doctor --repair`` rewrote terms or vectors) and no
        :class:`IndexChanges` says how. Before returning, drop everything derived from the old
        rows, in memory and on disk (erased text must not survive here), so the next search
        answers from the :class:`IndexSource` as it is now; rebuild now or on that search."""
        ...

    def chunk_sketches(self, agent_id: str, ids: Sequence[int], space: Space) -> Any:
        """Optional: the passage sketches of these chunks, as the backend keeps them from the
        embedder of ``space`` (a :class:`goclaw_search.passage_sketches.SketchBatch`; an
        id it has none of, ``-1`` included, has none), for the memory reranker's passage step
        (docs/memory.md, "Passages"). Default None: the step reads the hits' text."""
        return None

    def close(self) -> None:
        """The engine is closing: release connections, files and threads; no call follows."""
        return None
