"""Value types exchanged through the hooks.

Plugins return these (or any object with the same attributes: the Protocols are structural).
They are deliberately small; behaviour lives in the plugins that produce and consume them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

# The provider contracts live in goclaw.contracts.providers; re-exported for existing imports.
from goclaw.contracts.providers import EmbeddingProvider as EmbeddingProvider
from goclaw.contracts.providers import LLMProvider as LLMProvider

if TYPE_CHECKING:
    from goclaw.engine import Engine
    from goclaw.store.models import Agent

# --------------------------------------------------------------------------- prompt


@dataclass(frozen=True)
class ToolInfo:
    """A tool the runtime offers the model this turn (rendered by the Tooling section)."""

    name: str
    description: str = ""


@dataclass(frozen=True)
class PromptRequest:
    """What a runtime knows when it asks for a system prompt (spec §5).

    ``mode=None`` lets the engine pick: subagent and cron session keys give ``minimal``,
    everything else ``full`` (DECISIONS.md, modes). A subagent or cron key keeps its mode even
    when ``mode`` names another one (issue 12).
    """

    agent: str
    user: str | None = None
    mode: str | None = None
    session_key: str | None = None
    message: str | None = None
    tools: tuple[ToolInfo, ...] = ()
    channel: str | None = None
    sandbox: bool = False
    extra_prompt: str | None = None
    # Per-request skill filter (spec §12.5): None = use the agent's allow list.
    skill_filter: tuple[str, ...] | None = None
    now: datetime | None = None


@dataclass
class ContextFile:
    """One context file as it enters the prompt (after merging, before truncation)."""

    name: str
    content: str
    source: str = "agent"  # agent | user | virtual | <plugin-defined>
    virtual: bool = False  # virtual files render in <system_context>, not <context_file>


@dataclass
class PromptContext:
    """Everything a prompt section may read while rendering (built once per prompt build).

    ``state`` is a scratch dict that sections and slash commands share within one build
    (for example the activated skill); it never survives the build.
    """

    engine: Engine
    request: PromptRequest
    agent: Agent
    user: str
    mode: str
    files: list[ContextFile] = field(default_factory=list)
    bootstrapping: bool = False  # BOOTSTRAP.md is pending: virtual files are skipped
    state: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class PromptSection(Protocol):
    """A section of the system prompt (spec §5).

    ``order`` positions it (the spec's numbers: Identity 1, Bootstrap override 1.5, ...);
    ``modes`` lists the prompt modes it appears in. ``render`` returns the text, or ``None``
    / ``""`` to leave the section out of this build.
    """

    name: str
    order: float
    modes: frozenset[str]

    def render(self, ctx: PromptContext) -> str | None: ...


@dataclass(frozen=True)
class PromptMode:
    """A prompt mode. ``file_allowlist`` limits which context files load (None = all)."""

    name: str
    description: str = ""
    file_allowlist: frozenset[str] | None = None


@runtime_checkable
class ContextFileSource(Protocol):
    """Where context files come from (database, filesystem, ...). Later ``order`` wins a
    same-name clash, so the per-user source (higher order) overrides the agent-level one."""

    name: str
    order: int

    def load(self, ctx: PromptContext) -> list[ContextFile]: ...


# --------------------------------------------------------------------------- skills


@runtime_checkable
class SkillTier(Protocol):
    """A place skills come from (spec §8). ``priority`` 1 is the highest tier; a higher tier's
    skill overrides a lower tier's skill with the same folder slug."""

    name: str
    priority: int

    def roots(self, engine: Engine) -> list[Path]:
        """Folders to watch for hot reload (may be empty for database-backed tiers)."""
        ...

    def discover(self, engine: Engine) -> Iterable[Any]:
        """The skills this tier holds (the skills plugin defines the record type)."""
        ...


# --------------------------------------------------------------------------- slash commands


@dataclass
class SlashResult:
    """What a slash command did to this turn (spec §9.5).

    ``skill`` narrows the turn to one skill whose full SKILL.md is injected; ``reply`` is a
    direct answer (``/list-skills``, ``/help``); ``message`` replaces the user message.
    """

    command: str
    skill: str | None = None
    message: str | None = None
    reply: str | None = None
    suggestions: list[str] = field(default_factory=list)


@runtime_checkable
class SlashCommand(Protocol):
    name: str
    order: int

    def handle(self, text: str, ctx: PromptContext) -> SlashResult | None:
        """Return a result if ``text`` is this command, else ``None``."""
        ...


# --------------------------------------------------------------------------- providers


# --------------------------------------------------------------------------- search


@dataclass
class SearchHit:
    """One search result, shared by memory and skill search backends."""

    id: Any
    score: float
    text: str = ""
    path: str = ""
    start_line: int = 0
    end_line: int = 0
    scope: str = "agent"  # agent | user
    tier: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- workers and tools


@runtime_checkable
class ConsolidationWorker(Protocol):
    """Handles durable events of the listed types (spec §18). Handlers must be idempotent."""

    name: str
    event_types: frozenset[str]

    def handle(self, event: Any, engine: Engine) -> None: ...


@dataclass(frozen=True)
class Tool:
    """A tool a runtime can hand to its model (``skill_search``, ``memory_search``, ...)."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    func: Callable[..., Any]


# A factory building a named provider/backend from the engine (single-provider registries).
Factory = Callable[["Engine"], Any]
