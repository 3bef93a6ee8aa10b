"""Service contracts: what each ``goclaw_services`` name promises (issue 13 item 1).

A plugin contributes services by name through ``goclaw_services``; the engine exposes each as an
attribute typed by the Protocol below (``engine.memory`` is a :class:`MemoryService`). A third
party replaces a feature by disabling its plugin and providing an object that satisfies the same
Protocol under the same name. :data:`SERVICES` maps every documented name to its Protocol; the
meta-tests check each built-in against it, member by member and parameter by parameter.

Return values that are plugin records (``MemoryHit``, ``ResolvedSkill``, ``EpisodicSummary``
rows, ...) are typed ``Any`` here: their documented fields are listed in the docstrings, and
their ``as_dict()`` / JSON shapes are the CLI contract of DESIGN.md §7.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from goclaw.store.models import Agent
    from goclaw.types import PromptRequest


# --------------------------------------------------------------------------- context files


@runtime_checkable
class ContextFileService(Protocol):
    """``engine.files`` (``goclaw.context_files``, essential): agent-level and per-user context
    files (AGENTS.md, SOUL.md, ...; spec §1, §4). ``user=None`` means agent level."""

    @property
    def cache_seconds(self) -> float:
        """How long a cached read may be trusted across processes (0 = never cache)."""
        ...

    def get(self, agent: str, name: str, user: str | None = None) -> str:
        """The file's content; :class:`~goclaw.errors.NotFoundError` when it does not exist."""
        ...

    def set(self, agent: str, name: str, content: str, user: str | None = None) -> str:
        """Write a file as an operator (``goclaw files set``); writing BOOTSTRAP.md empty deletes it."""
        ...

    def list(self, agent: str, user: str | None = None) -> builtins.list[Any]:
        """Files of one level: records with ``name``, ``chars``, ``updated_at``."""
        ...

    def delete(self, agent: str, name: str, user: str | None = None) -> bool:
        """Delete a file; False when there was none."""
        ...

    def users(self, agent: str) -> builtins.list[str]:
        """Users that have files of their own for ``agent``."""
        ...

    def read_from_chat(self, agent: str, user: str | None, name: str) -> str:
        """The file tool's read: a virtual file answers "already loaded in system prompt"."""
        ...

    def write_from_chat(self, agent: str, user: str, name: str, content: str) -> str:
        """The file tool's write, with the predefined agents' write protection (DECISIONS.md)."""
        ...


@runtime_checkable
class Seeder(Protocol):
    """``engine.service("seeder")`` (``goclaw.bootstrap``): seed context files from templates."""

    def seed_agent(self, agent: str | Agent) -> list[str]:
        """Seed the agent-level files (spec §3); returns the names written."""
        ...

    def seed_user(self, agent: str | Agent, user: str, *, skip_if_any_exist: bool = True) -> list[str]:
        """Seed a user's files on their first prompt (spec §3); never overwrites."""
        ...


@runtime_checkable
class Summoner(Protocol):
    """``engine.service("summoner")`` (``goclaw.bootstrap``): create an agent from a description
    with one LLM call, falling back to templates (spec §7)."""

    def summon(
        self, name: str, description: str, *, agent_type: str = "predefined", **llm_options: Any
    ) -> dict[str, Any]: ...


# --------------------------------------------------------------------------- prompt


@runtime_checkable
class PromptBuild(Protocol):
    """A built system prompt (``goclaw prompt --json``, DESIGN.md §7)."""

    prompt: str
    mode: str
    sections: list[dict[str, Any]]
    files: list[dict[str, Any]]
    skills_mode: str | None
    activated_skill: str | None
    reply: str | None

    def as_dict(self) -> dict[str, Any]: ...


@runtime_checkable
class PromptService(Protocol):
    """``engine.prompt`` (``goclaw.prompt``, essential): BuildSystemPrompt (spec §5)."""

    def build(self, request: PromptRequest) -> Any:
        """Build the prompt for ``request``; returns a :class:`PromptBuild`."""
        ...

    def build_for(self, agent: str, user: str | None = None, **kwargs: Any) -> Any:
        """``build(PromptRequest(agent=agent, user=user, **kwargs))``."""
        ...


# --------------------------------------------------------------------------- skills


@runtime_checkable
class SkillsService(Protocol):
    """``engine.skills`` (``goclaw.skills``): tiered skills, search, grants (spec §8-§12).

    Listing and search honour the agent's allow list and grants: a skill the caller cannot
    access is never revealed. Items have ``slug``, ``name``, ``description``, ``source``,
    ``path``, ``shadows``; search hits ``slug``, ``name``, ``score``, ``source``.
    """

    def list(
        self,
        agent: str | Agent | None = None,
        user: str | None = None,
        skill_filter: Any = None,
        *,
        include_all: bool = False,
    ) -> builtins.list[Any]: ...

    def search(
        self,
        query: str,
        agent: str | Agent | None = None,
        user: str | None = None,
        skill_filter: Any = None,
        *,
        channel: str = "hybrid",
        limit: int | None = None,
        include_all: bool = False,
    ) -> builtins.list[Any]: ...

    def show(
        self,
        slug: str,
        agent: str | Agent | None = None,
        user: str | None = None,
        skill_filter: Any = None,
        *,
        include_all: bool = False,
    ) -> Any: ...

    def use(
        self, slug: str, agent: str | Agent | None = None, user: str | None = None, skill_filter: Any = None
    ) -> str:
        """The skill's body as the model reads it on activation."""
        ...

    def lint(self, paths: builtins.list[Path] | None = None) -> builtins.list[Any]: ...

    def add(
        self, path: str | Path, *, owner: str = "", visibility: str | None = None, slug: str | None = None
    ) -> dict[str, Any]:
        """Install a skill folder or archive into the managed store (tier 4)."""
        ...

    def grant(
        self,
        slug: str,
        *,
        agent: str | None = None,
        user: str | None = None,
        pinned_version: int | None = None,
        granted_by: str = "",
    ) -> None: ...

    def revoke(self, slug: str, *, agent: str | None = None, user: str | None = None) -> bool: ...

    def set_visibility(self, slug: str, visibility: str, *, owner: str | None = None) -> None:
        """Change a managed skill's visibility (``public``, ``private``, ...)."""
        ...

    def reload(self) -> None:
        """Drop the loader's cache (the watcher does this on a change)."""
        ...


# --------------------------------------------------------------------------- memory


@runtime_checkable
class MemoryFileWriter(Protocol):
    """``engine.memory.writer``: add, correct, delete and list memories in the Markdown memory
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
    """``engine.memory`` (``goclaw.memory``): index and search the memory files (spec §13-§15).

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
    ) -> Any:
        """:meth:`search` plus what the caller should know: an object with ``hits``,
        ``channels`` (the channels that ran) and ``notes`` (e.g. "full-text only: no embedder")."""
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

    @property
    def writer(self) -> MemoryFileWriter: ...


@runtime_checkable
class SessionService(Protocol):
    """``engine.sessions`` (``goclaw.memory``): conversation records, compaction and the memory
    flush (spec §16). :meth:`end` publishes ``run.completed`` in the same transaction."""

    def append(
        self, agent: str | Agent, key: str, role: str, content: str, user: str | None = None
    ) -> Any: ...

    def end(self, key: str) -> Any: ...

    def get(self, key: str) -> Any: ...

    def messages(self, key: str, *, include_compacted: bool = False) -> builtins.list[Any]: ...

    def tokens(self, key: str) -> int: ...

    def compact(self, key: str, *, keep_last: int | None = None) -> Any: ...

    def flush(self, key: str, *, messages: builtins.list[Any] | None = None) -> Any: ...

    def maintain(self, key: str) -> dict[str, Any]:
        """After a turn: flush at the flush threshold, compact above the compaction trigger;
        returns ``{"tokens", "flush", "compaction"}``."""
        ...


# --------------------------------------------------------------------------- V3 memory


@runtime_checkable
class EpisodicService(Protocol):
    """``engine.service("episodic")``: episodic summaries (spec §17 L1)."""

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

    def prune_expired(self, now: datetime | None = None) -> int: ...


@runtime_checkable
class KnowledgeGraphService(Protocol):
    """``engine.kg``: the temporal knowledge graph (spec §20). As-of queries follow
    DECISIONS.md: ``valid_from <= t AND (valid_until IS NULL OR valid_until > t)``."""

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
    """``engine.service("channel_memory")``: memory gathered from shared channels, with
    per-channel opt-in, exclusions and approval (spec §19)."""

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


# --------------------------------------------------------------------------- registry


def _events_protocol() -> type:
    from goclaw.contracts.events import EventPublisher

    return EventPublisher


# Every documented service name -> (its Protocol, the default plugin that provides it).
SERVICES: dict[str, tuple[type, str]] = {
    "files": (ContextFileService, "goclaw.context_files"),
    "seeder": (Seeder, "goclaw.bootstrap"),
    "summoner": (Summoner, "goclaw.bootstrap"),
    "prompt": (PromptService, "goclaw.prompt"),
    "skills": (SkillsService, "goclaw.skills"),
    "memory": (MemoryService, "goclaw.memory"),
    "sessions": (SessionService, "goclaw.memory"),
    "episodic": (EpisodicService, "goclaw.consolidation"),
    "kg": (KnowledgeGraphService, "goclaw.consolidation"),
    "channel_memory": (ChannelMemoryService, "goclaw.consolidation"),
    "events": (_events_protocol(), "kernel"),
}

__all__ = [
    "SERVICES",
    "ChannelMemoryService",
    "ContextFileService",
    "EpisodicService",
    "KnowledgeGraphService",
    "MemoryFileWriter",
    "MemoryService",
    "PromptBuild",
    "PromptService",
    "Seeder",
    "SessionService",
    "SkillsService",
    "Summoner",
]
