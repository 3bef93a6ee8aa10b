"""Service contracts: what each ``goclaw_services`` name promises.

A plugin contributes services by name through ``goclaw_services``; a plugin reaches one with
``host.service(name)`` and may type it with the Protocol below. A third
party replaces a feature by disabling its plugin and providing an object that satisfies the same
Protocol under the same name. :data:`SERVICES` maps every documented name to its Protocol; the
meta-tests check each built-in against it, member by member and parameter by parameter.

Return values that are plugin records (``MemoryHit``, ``ResolvedSkill``, ``EpisodicSummary``
rows, ...) are typed ``Any`` here: their documented fields are listed in the docstrings, and
their ``as_dict()`` / JSON shapes are what the CLI prints with ``--json``.
"""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from goclaw.contracts.host import EventPublisher
from goclaw.contracts.memory import (
    ChannelMemoryService,
    EpisodicService,
    KnowledgeGraphService,
    MemoryService,
    SessionService,
)

if TYPE_CHECKING:
    from goclaw.contracts.hooks import PromptRequest
    from goclaw.contracts.store import Agent


# --------------------------------------------------------------------------- context files


@runtime_checkable
class ContextFileService(Protocol):
    """``host.service("files")`` (``goclaw.context_files``, essential): agent-level and per-user context
    files (AGENTS.md, SOUL.md, ...). ``user=None`` means agent level."""

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
        """The file tool's write, with the predefined agents' write protection."""
        ...


@runtime_checkable
class Seeder(Protocol):
    """``host.service("seeder")`` (``goclaw.bootstrap``): seed context files from templates."""

    def seed_agent(self, agent: str | Agent) -> list[str]:
        """Seed the agent-level files from templates; returns the names written."""
        ...

    def seed_user(self, agent: str | Agent, user: str, *, skip_if_any_exist: bool = True) -> list[str]:
        """Seed a user's files on their first prompt; never overwrites."""
        ...


@runtime_checkable
class Summoner(Protocol):
    """``host.service("summoner")`` (``goclaw.bootstrap``): create an agent from a description
    with one LLM call, falling back to templates."""

    def summon(
        self, name: str, description: str, *, agent_type: str = "predefined", **llm_options: Any
    ) -> dict[str, Any]: ...


# --------------------------------------------------------------------------- prompt


@runtime_checkable
class PromptBuild(Protocol):
    """A built system prompt (``goclaw prompt --json``)."""

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
    """``host.service("prompt")`` (``goclaw.prompt``, essential): builds the system prompt."""

    def build(self, request: PromptRequest) -> Any:
        """Build the prompt for ``request``; returns a :class:`PromptBuild`."""
        ...

    def build_for(self, agent: str, user: str | None = None, **kwargs: Any) -> Any:
        """``build(PromptRequest(agent=agent, user=user, **kwargs))``."""
        ...


# --------------------------------------------------------------------------- skills


@runtime_checkable
class SkillsService(Protocol):
    """``host.service("skills")`` (``goclaw.skills``): tiered skills, search, grants.

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


# --------------------------------------------------------------------------- registry


# Every documented service name -> (its Protocol, the default plugin that provides it).
SERVICES: dict[str, tuple[type, str]] = {
    "files": (ContextFileService, "goclaw.context_files"),
    "seeder": (Seeder, "goclaw.bootstrap"),
    "summoner": (Summoner, "goclaw.bootstrap"),
    "prompt": (PromptService, "goclaw.prompt"),
    "skills": (SkillsService, "goclaw.skills"),
    "memory": (MemoryService, "goclaw.memory"),
    "sessions": (SessionService, "goclaw.memory"),
    "episodic": (EpisodicService, "goclaw.episodic"),
    "kg": (KnowledgeGraphService, "goclaw.kg"),
    "channel_memory": (ChannelMemoryService, "goclaw.channel_memory"),
    "events": (EventPublisher, "kernel"),
}

__all__ = [
    "SERVICES",
    "ContextFileService",
    "PromptBuild",
    "PromptService",
    "Seeder",
    "SkillsService",
    "Summoner",
]
