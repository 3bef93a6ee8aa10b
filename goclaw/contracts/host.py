"""What a plugin may ask of the engine: the :class:`Host` Protocol, and the protocols it hands out.

Every hook that receives the engine receives a ``Host`` (``goclaw_services(engine)``,
``goclaw_startup(engine)``, a provider factory, a worker's ``handle(event, engine)``, ...). It is
the engine's public face for plugins: :class:`goclaw.Engine` implements it structurally, and a
plugin that asks for nothing else keeps working whatever the kernel does inside. Where the host
hands out one of its own objects (``host.db``, ``host.agents``, ``host.hooks``, ...), the type
here describes the part a plugin may use, not the kernel's class.

Feature services are reached by name: ``host.service("memory")`` (its contract Protocol is in
:data:`goclaw.contracts.services.SERVICES`), ``host.has_service("kg")`` to ask first.

The protocols that hold or receive the host live here too (prompt context and sections,
context-file sources, slash commands, skill tiers, registry factories); the plain values they
exchange are in :mod:`goclaw.contracts.hooks`.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from goclaw.contracts.hooks import ContextFile, PromptRequest, SlashResult, Tool

if TYPE_CHECKING:
    from pydantic import BaseModel
    from sqlalchemy import orm
    from sqlmodel import Session

    from goclaw.contracts.providers import EmbeddingProvider, LLMProvider
    from goclaw.contracts.store import Agent, AgentLink, Database, Team
    from goclaw.contracts.tools import ToolContext, ToolResult

T = TypeVar("T")
M = TypeVar("M", bound="BaseModel")

__all__ = [
    "AgentDirectory",
    "ChangeTracker",
    "ContextFileSource",
    "EventPublisher",
    "Factory",
    "HookCalls",
    "Host",
    "HostSettings",
    "PromptContext",
    "PromptSection",
    "SkillTier",
    "SlashCommand",
    "Tokenizer",
    "ToolCaller",
    "settings_or_defaults",
]


# --------------------------------------------------------------------------- the host's parts


class HostSettings(Protocol):
    """``host.settings``: the workspace settings a plugin may read (``goclaw.toml``'s top level)."""

    @property
    def tenant_id(self) -> str:
        """The tenant every public read and write is scoped to."""
        ...

    @property
    def product_name(self) -> str:
        """The product name the Identity section uses."""
        ...


class AgentDirectory(Protocol):
    """``host.agents``: create and look up agents, change them, link them (kernel-owned)."""

    def create(
        self,
        name: str,
        agent_type: str = "open",
        *,
        display_name: str = "",
        description: str = "",
        workspace_dir: str | None = None,
        settings: dict[str, Any] | None = None,
        status: str = "active",
    ) -> Agent:
        """Create an agent in the host's tenant; ``goclaw_agent_created`` then runs."""
        ...

    def update(self, name: str, **fields: Any) -> Agent:
        """Change ``display_name``, ``description``, ``status``, ``settings``,
        ``workspace_dir`` or ``agent_type``."""
        ...

    def get(self, name: str, session: Session | None = None) -> Agent:
        """The agent called ``name`` (or with that id) in the host's tenant;
        :class:`~goclaw.errors.NotFoundError` otherwise."""
        ...

    def get_cached(self, name: str, ttl: float = 5.0) -> Agent:
        """:meth:`get` through a cache that any agent write in this process invalidates, and that
        trusts an entry for at most ``ttl`` seconds (another process's writes)."""
        ...

    def list(self) -> builtins.list[Agent]:
        """The tenant's agents, by name."""
        ...

    def update_settings(self, name: str, **values: Any) -> Agent:
        """Merge ``values`` into the agent's settings (``skill_allow_list``, auto-inject, ...)."""
        ...

    def link(self, source: str, target: str, description: str = "") -> AgentLink:
        """Let ``source`` delegate to ``target`` (DELEGATION.md)."""
        ...

    def links(self, source: str) -> builtins.list[tuple[Agent, AgentLink]]:
        """The agents ``source`` can delegate to, with each link, ordered by name."""
        ...

    def teams_of(self, agent: str) -> builtins.list[tuple[Team, str, builtins.list[tuple[Agent, str]]]]:
        """For each team ``agent`` belongs to: (team, its role, [(teammate, role)])."""
        ...


@runtime_checkable
class EventPublisher(Protocol):
    """``host.events``: publish into the durable queue and see who listens
    (:mod:`goclaw.contracts.events` names the events and their payloads)."""

    def publish(
        self,
        session: orm.Session,
        event_type: str,
        payload: Mapping[str, Any],
        agent_id: str = "",
        user_id: str = "",
    ) -> int:
        """Insert the event and one delivery per subscribed worker in ``session``'s transaction."""
        ...

    def publish_now(
        self, event_type: str, payload: Mapping[str, Any], agent_id: str = "", user_id: str = ""
    ) -> int:
        """Publish in a transaction of its own."""
        ...

    def subscribers(self, event_type: str) -> list[str]:
        """Names of the workers subscribed to ``event_type``, sorted."""
        ...


class ChangeTracker(Protocol):
    """``host.change_tracker(name, tables)``: a generation counter bumped by every committed write
    to the watched tables in this process, and a keyed cache that trusts an entry for one
    generation and at most ``ttl`` seconds (writes by other processes)."""

    @property
    def generation(self) -> int: ...

    def cached(self, key: Any, ttl: float, load: Callable[[], T]) -> T:
        """``load()`` once per generation and per ``ttl`` seconds; ``ttl <= 0`` never caches."""
        ...

    def bump(self) -> None:
        """Invalidate every cached entry."""
        ...

    def close(self) -> None:
        """Stop watching (the host closes its trackers when it closes)."""
        ...


@runtime_checkable
class Tokenizer(Protocol):
    """``host.tokenizer`` (setting ``tokenizer``), and what a ``goclaw_tokenizers`` factory
    returns: counts the tokens of a text."""

    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int: ...


class ToolCaller(Protocol):
    """``host.tools``: list and run the runtime tools under the tool calling contract
    (:mod:`goclaw.contracts.tools`)."""

    def list(self, context: ToolContext | None = None) -> builtins.list[Any]:
        """The tools (``name``, ``description``, ...) sorted by name; with a context, only those
        usable in it."""
        ...

    def call(
        self,
        name: str,
        args: Mapping[str, Any] | str | None,
        context: ToolContext,
        *,
        raise_errors: bool = False,
    ) -> ToolResult:
        """Run tool ``name`` for ``context`` with the model's ``args`` (a dict or a JSON string);
        errors a user or a model can cause come back as a result with ``is_error=True``."""
        ...


class HookCalls(Protocol):
    """``host.hooks``: the plugins' contributions to a hook, collected (each list sorted, each
    registry checked for clashes). A plugin calls the hooks it declares itself through the
    generic :meth:`call`, :meth:`first`, :meth:`items` and :meth:`registry`."""

    @property
    def manager(self) -> Any:
        """The plugin manager (pluggy's, under ``.pm``), for what the calls below do not
        answer, e.g. how many plugins implement a hook."""
        ...

    def guard(self, what: str, name: str, fn: Callable[[], T], default: T) -> T:
        """Run a contributed object's method: a third-party failure is reported and ``default``
        returned (re-raised under ``plugins.strict``); a built-in's failure propagates."""
        ...

    def call(self, hook: str, **kwargs: Any) -> list[tuple[str | None, Any]]:
        """Call an "everyone contributes" hook by name, a plugin's own included (one it added
        through ``goclaw_add_hookspecs``): ``[(plugin, result)]``, Nones dropped, a third party's
        failure reported and skipped; ``[]`` when nobody specified the hook (its plugin is off)."""
        ...

    def first(self, hook: str, **kwargs: Any) -> Any:
        """Call a ``firstresult`` hook by name: the first non-None answer, or None."""
        ...

    def items(
        self, hook: str, what: str, key: Callable[[Any], Any] = lambda item: item.name, **kwargs: Any
    ) -> list[Any]:
        """Call a hook whose answers are lists of named items (``what`` names them in errors):
        flattened, sorted by ``key``; a name two plugins contribute is an error naming both;
        kept for the host's life when the hook takes no arguments."""
        ...

    def registry(self, hook: str, what: str) -> dict[str, Factory]:
        """Call a registry hook (``{name: factory}`` answers): merged, kept for the host's life;
        a name two plugins register is an error naming both."""
        ...

    def implementers(self, hook: str) -> list[object]:
        """The plugin objects implementing ``hook`` (wrappers included)."""
        ...

    def tools(self, engine: Host) -> list[Tool]: ...


# --------------------------------------------------------------------------- the host


@runtime_checkable
class Host(Protocol):
    """What a plugin may ask of the engine (implemented by :class:`goclaw.Engine`)."""

    @property
    def workspace(self) -> Path:
        """The workspace folder (``goclaw.toml`` lives there)."""
        ...

    @property
    def settings(self) -> HostSettings: ...

    @property
    def db(self) -> Database: ...

    @property
    def agents(self) -> AgentDirectory: ...

    @property
    def hooks(self) -> HookCalls: ...

    @property
    def events(self) -> EventPublisher:
        """The durable event queue: the kernel's, present whatever plugins are disabled."""
        ...

    @property
    def tokenizer(self) -> Tokenizer: ...

    @property
    def tools(self) -> ToolCaller: ...

    def plugin_settings(self, feature: str) -> Any:
        """The validated ``[plugins.<feature>]`` model (defaults when the table is absent);
        :class:`~goclaw.errors.FeatureUnavailableError` when no enabled plugin declares it."""
        ...

    def service(self, name: str) -> Any:
        """The service called ``name`` (its Protocol: :data:`goclaw.contracts.services.SERVICES`);
        :class:`~goclaw.errors.FeatureUnavailableError` when no active plugin provides it."""
        ...

    def has_service(self, name: str) -> bool:
        """Whether an active plugin (or the kernel) provides the service called ``name``."""
        ...

    def embedder(self, name: str | None = None) -> EmbeddingProvider | None:
        """The configured embedding provider (or the one called ``name``), ``None`` when there is
        none; a :class:`~goclaw.errors.GoclawError` when it cannot start (degrade to full text)."""
        ...

    def embedding_provider_name(self) -> str:
        """The configured embedding provider's name; ``"none"`` when there is none."""
        ...

    def llm(self, name: str | None = None) -> LLMProvider | None:
        """The configured LLM provider, ``None`` when no model is configured (use a fallback)."""
        ...

    def change_tracker(self, name: str, watched: Iterable[type[Any]]) -> ChangeTracker:
        """The host's change tracker called ``name`` (made on first use, watching ``watched``
        tables; closed with the host)."""
        ...

    def agent_dir(self, agent: Agent) -> Path:
        """The agent's own folder (memory files live there)."""
        ...

    def on_close(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` when the host closes (watchers, thread pools)."""
        ...

    def run_workers(self, stop: threading.Event | None = None) -> dict[str, Any]:
        """One pass of the consolidation workers, its report as ``goclaw workers run --once
        --json`` prints it; with ``stop``, serve the queue until it is set (``[events]``)."""
        ...


def settings_or_defaults(host: Host, feature: str, model: type[M]) -> M:
    """``host.plugin_settings(feature)`` when it is a ``model``, else ``model()``'s defaults: for
    code of a plugin that runs while the plugin owning the table is disabled or replaced (a
    worker, a tool)."""
    try:
        cfg = host.plugin_settings(feature)
    except Exception:
        return model()
    return cfg if isinstance(cfg, model) else model()


# --------------------------------------------------------------------------- what the hooks return


@dataclass
class PromptContext:
    """Everything a prompt section may read while rendering (built once per prompt build).

    ``state`` is a scratch dict that sections and slash commands share within one build
    (for example the activated skill); it never survives the build.
    """

    engine: Host
    request: PromptRequest
    agent: Agent
    user: str
    mode: str
    files: list[ContextFile] = field(default_factory=list)
    bootstrapping: bool = False  # BOOTSTRAP.md is pending: virtual files are skipped
    state: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class PromptSection(Protocol):
    """A section of the system prompt.

    ``order`` positions it (Identity 1, Bootstrap override 1.5, ...);
    ``modes`` lists the prompt modes it appears in. ``render`` returns the text, or ``None``
    / ``""`` to leave the section out of this build.
    """

    name: str
    order: float
    modes: frozenset[str]

    def render(self, ctx: PromptContext) -> str | None: ...


@runtime_checkable
class ContextFileSource(Protocol):
    """Where context files come from (database, filesystem, ...). Later ``order`` wins a
    same-name clash, so the per-user source (higher order) overrides the agent-level one."""

    name: str
    order: int

    def load(self, ctx: PromptContext) -> list[ContextFile]: ...


@runtime_checkable
class SlashCommand(Protocol):
    name: str
    order: int

    def handle(self, text: str, ctx: PromptContext) -> SlashResult | None:
        """Return a result if ``text`` is this command, else ``None``."""
        ...


@runtime_checkable
class SkillTier(Protocol):
    """A place skills come from. ``priority`` 1 is the highest tier; a higher tier's
    skill overrides a lower tier's skill with the same folder slug."""

    name: str
    priority: int

    def roots(self, engine: Host) -> list[Path]:
        """Folders to watch for hot reload (may be empty for database-backed tiers)."""
        ...

    def discover(self, engine: Host) -> Iterable[Any]:
        """The skills this tier holds (the skills plugin defines the record type)."""
        ...


# A factory building a named provider, backend or tokenizer from the host (the registries of
# ``goclaw_search_backends``, ``goclaw_embedding_providers``, ``goclaw_llm_providers``, ...).
Factory = Callable[[Host], Any]
