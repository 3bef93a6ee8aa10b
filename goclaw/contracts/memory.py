"""Memory-family service contracts: memory files and their writer, sessions, episodic memory,
the knowledge graph and channel memory.

Part of :mod:`goclaw.contracts.services` (which lists every service name in ``SERVICES``); the
search backend a memory service uses is :mod:`goclaw.contracts.search`.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from goclaw.contracts.store import Agent


# --------------------------------------------------------------------------- memory


@runtime_checkable
class MemoryFileWriter(Protocol):
    """``host.service("memory").writer``: add, correct, delete and list memories in the Markdown memory
    files (atomic writes, re-indexed at once). The flush and dreaming write through it."""

    def add(
        self,
        agent: str | Agent,
        text: str,
        user: str | None = None,
        *,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        day: date | str | None = None,
    ) -> Any: ...

    def correct(
        self,
        agent: str | Agent,
        text: str,
        user: str | None = None,
        *,
        id: str | None = None,
        path: str | None = None,
        lines: tuple[int, int] | None = None,
    ) -> dict[str, Any]: ...

    def delete(
        self,
        agent: str | Agent,
        user: str | None = None,
        *,
        id: str | None = None,
        path: str | None = None,
        lines: tuple[int, int] | None = None,
    ) -> dict[str, Any]: ...

    def list(
        self, agent: str | Agent, user: str | None = None, *, tag: str | None = None, limit: int | None = None
    ) -> builtins.list[Any]: ...


@runtime_checkable
class MemoryService(Protocol):
    """``host.service("memory")`` (``goclaw.memory``): index and search the memory files.

    Search without ``user`` sees agent-level memory only; with ``user`` agent-level plus that
    user's own. Hits have ``path``, ``start_line``, ``end_line``, ``score``, ``scope``,
    ``snippet`` (and ``tier``).
    """

    def index(
        self,
        agent: str | Agent | None = None,
        user: str | None = None,
        *,
        progress: Any = None,
        scopes: builtins.list[str] | None = None,
        bulk: bool = False,
    ) -> Any: ...

    def search(
        self,
        query: str,
        agent: str | Agent,
        user: str | None = None,
        *,
        limit: int | None = None,
        channel: str = "hybrid",
        filters: Any = None,
    ) -> builtins.list[Any]: ...

    def search_response(
        self,
        query: str,
        agent: str | Agent,
        user: str | None = None,
        *,
        limit: int | None = None,
        channel: str = "hybrid",
        include_extra: bool = True,
        filters: Any = None,
    ) -> Any:
        """:meth:`search` plus what the caller should know: an object with ``hits``,
        ``channels`` (the channels that ran) and ``notes`` (e.g. "full-text only: no embedder").
        ``filters``: tags, since, until, path, scope; ``limit`` counts the hits that pass."""
        ...

    def get(
        self,
        agent: str | Agent,
        path: str,
        user: str | None = None,
        *,
        from_line: int | None = None,
        to_line: int | None = None,
    ) -> dict[str, Any]: ...

    def watch(
        self,
        agent: str | Agent | None = None,
        user: str | None = None,
        *,
        debounce_ms: int | None = None,
        on_index: Callable[[Any], None] | None = None,
        start: bool = True,
    ) -> Any: ...

    def agent_dir(self, agent: str | Agent) -> Path: ...

    def invalidate(self, agent_id: str | None = None) -> None:
        """The agent's memory rows (every agent's when None) were changed outside an indexing
        run (``goclaw forget`` erased them): the search backend drops everything it derived
        from them (:meth:`goclaw.contracts.search.SearchBackend.invalidate`)."""
        ...

    def doctor(self, agent: str | None = None, *, repair: bool = False) -> Any:
        """Check every channel of the memory index (``goclaw memory doctor``): a report with
        ``checks`` (name, status, message, fix), ``repaired`` and ``as_json()``."""
        ...

    @property
    def writer(self) -> MemoryFileWriter: ...


@runtime_checkable
class SessionService(Protocol):
    """``host.service("sessions")`` (``goclaw.memory``): conversation records, compaction and the memory
    flush. :meth:`end` publishes ``run.completed`` in the same transaction."""

    def append(
        self, agent: str | Agent, key: str, role: str, content: str, user: str | None = None
    ) -> Any: ...

    def end(self, key: str) -> Any: ...

    def get(self, key: str) -> Any: ...

    def messages(self, key: str, *, include_compacted: bool = False) -> builtins.list[Any]: ...

    def recent_messages(self, key: str, *, limit: int, role: str | None = None) -> builtins.list[Any]:
        """The last ``limit`` messages of ``key`` (compacted ones too; only ``role``'s when given),
        oldest first; ``[]`` for an unknown key. Auto-injection reads the latest user turns so."""
        ...

    def tokens(self, key: str) -> int: ...

    def compact(self, key: str, *, keep_last: int | None = None) -> Any: ...

    def flush(self, key: str, *, messages: builtins.list[Any] | None = None) -> Any: ...

    def maintain(self, key: str) -> dict[str, Any]:
        """After a turn: flush at the flush threshold, compact above the compaction trigger;
        returns ``{"tokens", "flush", "compaction"}``."""
        ...


# --------------------------------------------------------------------------- V3 memory


@dataclass
class NewEpisode:
    """An episodic summary to record (:meth:`EpisodicService.build`). ``source_id`` makes the
    write idempotent per ``(agent_id, user_id)``; ``ttl_days=None`` = the agent's
    ``episodic_ttl_days``. Channel memory records its approved items through this."""

    agent_id: str
    user_id: str
    session_key: str
    summary: str
    source_id: str
    source_type: str = "session"
    turn_count: int = 0
    token_count: int = 0
    ttl_days: int | None = None
    key_topics: builtins.list[str] | None = None


@runtime_checkable
class EpisodicService(Protocol):
    """``host.service("episodic")``: episodic summaries of sessions."""

    def build(self, new: NewEpisode, *, redact_text: bool = True) -> Any:
        """A ready-to-insert row: redacted summary, L0 abstract, topics, embedding, expiry
        (no database write: embedding happens outside the caller's transaction)."""
        ...

    def add(self, session: Any, row: Any, *, publish: bool = True) -> tuple[Any, bool]:
        """In the caller's transaction: add ``row`` and publish ``episodic.created``, unless its
        ``source_id`` exists. Returns ``(the row now stored, whether it is new)``."""
        ...

    def get(self, episodic_id: str) -> Any: ...

    def list(
        self,
        agent_id: str,
        user: str | None = None,
        *,
        limit: int = 50,
        include_expired: bool = False,
        unpromoted_only: bool = False,
        exact_user: bool = False,
        any_tenant: bool = False,
    ) -> builtins.list[Any]: ...

    def search(
        self,
        agent_id: str,
        user: str | None,
        query: str,
        *,
        limit: int = 10,
        min_score: float = 0.0,
        vector_query: str | None = None,
    ) -> builtins.list[tuple[Any, float]]: ...

    def hits(
        self, agent_id: str, user: str | None, query: str, limit: int, min_score: float = 0.0
    ) -> builtins.list[Any]:
        """Summaries as ``memory_search`` hits (``tier="episodic"``)."""
        ...

    def promote(self, ids: builtins.list[str], at: datetime | None = None) -> int:
        """Mark these summaries promoted into long-term memory (what dreaming does once it has
        written them to a memory file: ``list(..., unpromoted_only=True)`` leaves them out);
        rows already promoted keep their time. Returns how many changed."""
        ...

    def prune_expired(self, now: datetime | None = None) -> int: ...


@runtime_checkable
class KnowledgeGraphService(Protocol):
    """``host.service("kg")``: the temporal knowledge graph. An as-of query at
    ``t`` sees the rows with ``valid_from <= t AND (valid_until IS NULL OR valid_until > t)``."""

    def entities(
        self,
        agent: str,
        user: str | None = None,
        *,
        as_of: datetime | None = None,
        include_history: bool = False,
        limit: int = 1000,
    ) -> builtins.list[Any]: ...

    def relations(
        self,
        agent: str,
        user: str | None = None,
        *,
        as_of: datetime | None = None,
        include_history: bool = False,
        limit: int = 1000,
    ) -> builtins.list[tuple[Any, dict[str, str]]]: ...

    def facts_for_episode(self, episodic_id: str) -> tuple[builtins.list[Any], builtins.list[Any]]: ...

    def entity_names(self, ids: Iterable[str]) -> dict[str, str]:
        """``{entity id: name}`` for the given ids (a relation's endpoints, ``memory_expand``)."""
        ...

    def merge(self, keep_id: str, drop_id: str) -> Any: ...

    def supersede_entity(
        self,
        entity_id: str,
        *,
        name: str | None = None,
        entity_type: str | None = None,
        description: str | None = None,
        confidence: float | None = None,
        properties: dict[str, Any] | None = None,
        at: datetime | None = None,
    ) -> Any:
        """Close the current row and insert its successor in one transaction (nothing deleted)."""
        ...

    def supersede_relation(
        self,
        relation_id: str,
        *,
        target_id: str | None = None,
        relation_type: str | None = None,
        confidence: float | None = None,
        at: datetime | None = None,
    ) -> Any: ...

    def candidates(
        self, agent: str | None = None, status: str | None = "pending"
    ) -> builtins.list[dict[str, Any]]:
        """Dedup candidates awaiting review."""
        ...

    def review_candidate(self, candidate_id: int, accept: bool) -> dict[str, Any]: ...


@runtime_checkable
class ChannelMemoryService(Protocol):
    """``host.service("channel_memory")``: memory gathered from shared channels, with
    per-channel opt-in, exclusions and approval."""

    def configure(
        self,
        agent: str,
        channel: str,
        *,
        enabled: bool | None = None,
        excluded_users: Iterable[str] | None = None,
        excluded_patterns: Iterable[str] | None = None,
        auto_approve: bool | None = None,
    ) -> dict[str, Any]: ...

    def config(self, agent: str, channel: str) -> dict[str, Any]: ...

    def ingest(
        self, agent: str, channel: str, messages: Iterable[Mapping[str, Any]], user: str | None = None
    ) -> builtins.list[dict[str, Any]]: ...

    def items(
        self, agent: str | None = None, channel: str | None = None, status: str | None = None
    ) -> builtins.list[dict[str, Any]]: ...

    def approve(self, item_id: int) -> dict[str, Any]: ...

    def reject(self, item_id: int) -> dict[str, Any]: ...


__all__ = [
    "ChannelMemoryService",
    "EpisodicService",
    "KnowledgeGraphService",
    "MemoryFileWriter",
    "MemoryService",
    "NewEpisode",
    "SessionService",
]
