"""The :class:`Engine` facade: what the CLI and embedding applications use.

``Engine.open(workspace=...)`` reads the configuration, builds a fresh plugin manager, opens
and migrates the database, validates every plugin's settings table and runs the start-up
hooks. Features are the services plugins contribute (hook ``goclaw_services``), by name:
``engine.service("memory")``, or as an attribute, ``engine.memory``; the engine knows none of
them. ``engine.agents`` and ``engine.events`` (the durable event queue, configured by
``[events]``) are the kernel's own and exist whatever is disabled.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goclaw.agents import AgentService
from goclaw.changes import ChangeTracker
from goclaw.config import Settings, load_settings, validate_plugin_table
from goclaw.errors import ConfigError, FeatureUnavailableError, PluginError
from goclaw.events import EventQueue
from goclaw.hooks import Hooks
from goclaw.plugins import GoclawPluginManager, build_plugin_manager, feature_of
from goclaw.store import migrate
from goclaw.store.database import Database

if TYPE_CHECKING:
    from pydantic import BaseModel

    from goclaw.contracts.providers import EmbeddingProvider, LLMProvider
    from goclaw.contracts.store import Agent
    from goclaw.tokenizer import Tokenizer
    from goclaw.tools import ToolRegistry

log = logging.getLogger(__name__)

# Services the kernel itself provides (always present, whatever is disabled).
KERNEL_SERVICES = frozenset({"events"})


class Engine:
    """One open workspace: settings, plugins, database and feature services."""

    def __init__(
        self,
        workspace: Path,
        settings: Settings,
        plugins: GoclawPluginManager,
        db: Database,
    ) -> None:
        self.workspace = workspace
        self.settings = settings
        self.plugin_manager = plugins
        self.hooks = Hooks(plugins)
        self.db = db
        self.agents = AgentService(self)
        cfg = settings.events
        # The event queue is the kernel's: publishers never ask whether it exists.
        self.events = EventQueue(
            self,
            max_attempts=cfg.max_attempts,
            backoff_base=cfg.backoff_base_seconds,
            backoff_max=cfg.backoff_max_seconds,
            lease_seconds=cfg.lease_seconds,
        )
        self._plugin_settings: dict[str, BaseModel] = {}
        self._services: dict[str, Any] = {}
        self._providers: dict[tuple[str, str], Any] = {}
        self._lock = threading.RLock()
        self._closers: list[Any] = []
        self._trackers: dict[str, ChangeTracker] = {}

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        workspace: str | Path = ".",
        database_url: str | None = None,
        *,
        extra_plugins: Iterable[tuple[str, object]] = (),
        migrate_schema: bool = True,
        startup: bool = True,
        **overrides: Any,
    ) -> Engine:
        """Open a workspace.

        Args:
            workspace: the workspace folder (``goclaw.toml`` lives there).
            database_url: overrides ``database_url`` from the config; ``None`` = config/SQLite.
            extra_plugins: extra ``(name, plugin)`` pairs to register after the built-ins (embedding
                apps and tests use this; installed plugins come from entry points).
            overrides: other top-level settings, e.g. ``product_name="Acme"`` or
                ``plugins={"disable": [...], "embeddings": {"provider": "none"}}``.
        """
        ws = Path(workspace).expanduser().resolve()
        if ws.exists() and not ws.is_dir():
            raise ConfigError(f"workspace {ws} is not a folder")
        settings = load_settings(ws, database_url=database_url, **overrides)
        manager = build_plugin_manager(settings.plugins, extra_plugins)
        db = Database.for_workspace(ws, settings.database_url)
        engine: Engine | None = None
        try:
            db.check_connection()
            engine = cls(ws, settings, manager, db)
            engine._validate_plugin_settings()
            if migrate_schema:
                migrate.upgrade(db, components=engine.hooks.schema_components())
            services = engine.hooks.services(engine)
            clash = sorted(set(services) & KERNEL_SERVICES)
            if clash:
                raise PluginError(
                    f"service(s) {', '.join(clash)} are the kernel's; a plugin cannot provide them"
                )
            engine._services = services
            if startup:
                engine.hooks.startup(engine)
        except BaseException:
            # A failed open (a schema refused, a bad plugin table, a start-up hook's error)
            # closes what it opened: else the pool's connections stay open until the garbage
            # collector finds them.
            try:
                if engine is not None:
                    engine.close()  # its closers too (what services and start-up hooks opened)
                else:
                    db.dispose()
            except Exception:  # closing must not mask the caller's own error
                log.debug("error while closing after a failed open", exc_info=True)
            raise
        return engine

    def _validate_plugin_settings(self) -> None:
        models = self.hooks.settings_models()
        tables = self.plugin_manager.installed.route_tables(
            self.settings.plugins.feature_tables(), {feature_of(name): m for name, m in models.items()}
        )
        known_features = {feature_of(name) for name in self.plugin_manager.records}
        for table in tables:
            if table not in known_features:
                raise ConfigError(
                    f"[plugins.{table}] does not match any plugin; known: {', '.join(sorted(known_features))}"
                )
        for plugin_name, model in models.items():
            feature = feature_of(plugin_name)
            self._plugin_settings[feature] = validate_plugin_table(feature, model, tables.get(feature))

    # ------------------------------------------------------------------ settings and services
    def plugin_settings(self, feature: str) -> Any:
        """The validated ``[plugins.<feature>]`` model (defaults when the table is absent)."""
        try:
            return self._plugin_settings[feature]
        except KeyError:
            raise FeatureUnavailableError(
                f"no settings for plugin feature {feature!r} (is the plugin disabled?)"
            ) from None

    def service(self, name: str) -> Any:
        """:meth:`~goclaw.contracts.host.Host.service`; the error names the plugin that is off."""
        if name == "events":
            return self.events
        try:
            return self._services[name]
        except KeyError:
            owner = self.plugin_manager.service_owner(name)
            if owner is not None and owner[1] != "active":
                raise FeatureUnavailableError(
                    f"'{name}' is not available: plugin {owner[0]} is {owner[1]}"
                ) from None
            raise FeatureUnavailableError(f"no active plugin provides the '{name}' service") from None

    def has_service(self, name: str) -> bool:
        return name in self._services or name in KERNEL_SERVICES

    def __getattr__(self, name: str) -> Any:
        """A service as an attribute: ``engine.memory`` is ``engine.service("memory")``. A name
        that is neither a service nor declared by any plugin's manifest is a plain
        ``AttributeError``."""
        services = self.__dict__.get("_services")
        if name.startswith("_") or services is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        if name in services:
            return services[name]
        if self.plugin_manager.service_owner(name) is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return self.service(name)

    @functools.cached_property
    def tokenizer(self) -> Tokenizer:
        """The token counter (setting ``tokenizer``; :mod:`goclaw.tokenizer`)."""
        from goclaw.tokenizer import make_tokenizer

        return make_tokenizer(self.settings.tokenizer, self.hooks.tokenizers(), self)

    @functools.cached_property
    def tools(self) -> ToolRegistry:
        """The runtime tools under the tool calling contract (:mod:`goclaw.tools`)."""
        from goclaw.tools import ToolRegistry

        return ToolRegistry(self)

    # ------------------------------------------------------------------ providers
    def _provider(self, kind: str, registry: dict[str, Any], name: str) -> Any:
        key = (kind, name)
        with self._lock:
            if key not in self._providers:
                if name not in registry:
                    known = ", ".join(sorted(registry)) or "none"
                    raise ConfigError(f"unknown {kind} provider {name!r}; registered: {known}")
                self._providers[key] = registry[name](self)
            return self._providers[key]

    def embedding_provider_name(self) -> str:
        """``[plugins.embeddings] provider``; ``"none"`` also when that plugin is disabled."""
        cfg = self._plugin_settings.get("embeddings")
        return str(getattr(cfg, "provider", None) or "none")

    def embedder(self, name: str | None = None) -> EmbeddingProvider | None:
        """:meth:`~goclaw.contracts.host.Host.embedder` (``[plugins.embeddings] provider``)."""
        if name is None:
            name = self.embedding_provider_name()
        if name == "none":
            return None
        provider: EmbeddingProvider | None = self._provider(
            "embedding", self.hooks.embedding_providers(), name
        )
        return provider

    def llm(self, name: str | None = None) -> LLMProvider | None:
        """The configured LLM provider, or None when no model is configured (use fallbacks)."""
        if name is None:
            cfg = self._plugin_settings.get("llm")
            name = getattr(cfg, "provider", None) or "none"
        if name == "none":
            return None
        provider: LLMProvider | None = self._provider("llm", self.hooks.llm_providers(), name)
        return provider

    # ------------------------------------------------------------------ caches
    def change_tracker(self, name: str, watched: Iterable[type[Any]]) -> ChangeTracker:
        """:meth:`~goclaw.contracts.host.Host.change_tracker` (a :mod:`goclaw.changes` tracker)."""
        with self._lock:
            found = self._trackers.get(name)
            if found is None:
                found = ChangeTracker(self.db.engine, watched, name)
                self._trackers[name] = found
                self.on_close(found.close)
            return found

    # ------------------------------------------------------------------ paths
    def agent_dir(self, agent: Agent) -> Path:
        """The agent's own folder (memory files live there)."""
        if agent.workspace_dir:
            path = Path(agent.workspace_dir).expanduser()
            return path if path.is_absolute() else self.workspace / path
        return self.workspace / self.settings.agents_dir / agent.name

    # ------------------------------------------------------------------ lifecycle
    def on_close(self, fn: Any) -> None:
        """Register a callable run by :meth:`close` (watchers, thread pools)."""
        self._closers.append(fn)

    def run_workers(self, stop: threading.Event | None = None) -> dict[str, Any]:
        """One pass of the consolidation workers (its report); with ``stop``, serve until set."""
        from goclaw.events import WorkerRunner

        cfg = self.settings.events
        runner = WorkerRunner(self, batch_size=cfg.batch_size, poll_interval=cfg.poll_interval_seconds)
        if stop is None:
            return runner.run_once().as_dict()
        runner.serve(stop)
        return {}

    def close(self) -> None:
        while self._closers:
            fn = self._closers.pop()
            try:
                fn()
            except Exception:  # closing must not mask the caller's own error
                log.debug("error while closing", exc_info=True)
        self.db.dispose()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
