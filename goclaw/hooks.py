"""The typed facade through which the kernel calls every hook (STYLE.md §11).

Nothing else in goclaw touches ``pm.hook.*``. Every call goes through pluggy's own call loop
(``pm.hook.<name>(...)``), so hook wrappers, ``add_hookcall_monitoring`` and tracing work as in
any pluggy application. Each method knows which plugin produced each contribution
(:mod:`goclaw.hookcall`), so results are sorted by an explicit key, duplicates are errors naming
both plugins, and a third-party implementation that raises is reported and skipped (or re-raised
under ``plugins.strict``), while a built-in's exception propagates (it is our bug). Objects a
plugin contributed (sections, slash commands, context-file sources) are run through
:meth:`Hooks.guard` for the same isolation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from goclaw.contracts.commands import CommandSpec
from goclaw.errors import PluginError
from goclaw.hookcall import attribute

if TYPE_CHECKING:
    import click
    from pydantic import BaseModel

    from goclaw.contracts.events import ConsolidationWorker
    from goclaw.contracts.hooks import ContextFile, PromptMode, PromptRequest, Tool
    from goclaw.contracts.host import (
        ContextFileSource,
        Factory,
        Host,
        PromptContext,
        PromptSection,
        SkillTier,
        SlashCommand,
    )
    from goclaw.contracts.schema import ForgetScope, ForgetStep, SchemaComponent
    from goclaw.contracts.store import Agent
    from goclaw.plugins import GoclawPluginManager

T = TypeVar("T")
_WRAPPER = "a hook wrapper"


class Hooks:
    def __init__(self, manager: GoclawPluginManager) -> None:
        self.manager = manager
        self._cache: dict[str, Any] = {}
        # (kind, name) -> plugin that contributed it, for error attribution.
        self._owners: dict[tuple[str, str], str] = {}

    # ------------------------------------------------------------------ plumbing
    def _collect(self, hook: str, **kwargs: Any) -> list[tuple[str | None, Any]]:
        """Call ``hook`` through pluggy's own call loop (wrappers, monitoring and tracing see it);
        return ``[(plugin_name, result)]`` in call order, Nones dropped. A third-party
        implementation that raised was reported and contributes nothing
        (:mod:`goclaw.hookcall`); a result a wrapper made up has the wrapper's plugin as owner
        when exactly one third-party wrapper is registered, else ``None``."""
        caller = getattr(self.manager.pm.hook, hook)
        with self.manager.recorder.frame(hook) as recorded:
            results = caller(**kwargs)
        if not isinstance(results, list):
            raise PluginError(f"hook {hook} returned {type(results).__name__}, not a list (a hook wrapper?)")
        pairs = attribute(results, recorded)
        if any(owner is None for owner, _ in pairs):
            wrappers = {
                impl.plugin_name
                for impl in caller.get_hookimpls()
                if (impl.wrapper or impl.hookwrapper) and not self.manager.is_builtin(impl.plugin_name)
            }
            if len(wrappers) == 1:
                only = next(iter(wrappers))
                pairs = [(owner or only, result) for owner, result in pairs]
        return [(owner, result) for owner, result in pairs if result is not None]

    def _items(self, hook: str, key: Callable[[Any], Any], what: str, **kwargs: Any) -> list[Any]:
        """Flatten list contributions, reject duplicate names, sort by ``key``."""
        seen: dict[str, str] = {}
        items: list[Any] = []
        for plugin, result in self._collect(hook, **kwargs):
            for item in result:
                name = item.name
                owner = plugin or _WRAPPER
                if name in seen:
                    raise PluginError(
                        f"{what} {name!r} is provided by both {seen[name]!r} and {owner!r}; "
                        f"disable one of them"
                    )
                seen[name] = owner
                if plugin is not None:
                    self._owners[(what, name)] = plugin
                items.append(item)
        return sorted(items, key=key)

    def call(self, hook: str, **kwargs: Any) -> list[tuple[str | None, Any]]:
        """Call any "everyone contributes" hook by name, a plugin's own included (one it added
        through ``goclaw_add_hookspecs``): ``[(plugin, result)]`` in call order, Nones dropped,
        a third party's failure reported and skipped. A hook nobody specified (its plugin is
        off) answers ``[]``."""
        caller = getattr(self.manager.pm.hook, hook, None)
        if caller is None or caller.spec is None:
            return []
        return self._collect(hook, **kwargs)

    def first(self, hook: str, **kwargs: Any) -> Any:
        """Call a ``firstresult`` hook by name: the first non-None answer, or None (also when
        nobody specified the hook)."""
        caller = getattr(self.manager.pm.hook, hook, None)
        if caller is None or caller.spec is None:
            return None
        return caller(**kwargs)

    def implementers(self, hook: str) -> list[object]:
        """The plugin objects implementing ``hook`` (wrappers included), e.g. for a plugin to
        learn whether anyone but itself extends one of its own hooks."""
        caller = getattr(self.manager.pm.hook, hook, None)
        return [] if caller is None else [impl.plugin for impl in caller.get_hookimpls()]

    def owner(self, what: str, name: str) -> str | None:
        """The plugin that contributed item ``name`` of kind ``what`` (e.g. "prompt section")."""
        return self._owners.get((what, name))

    def guard(self, what: str, name: str, fn: Callable[[], T], default: T) -> T:
        """Run a contributed object's method: a third-party failure is reported and ``default``
        returned (re-raised under ``plugins.strict``); a built-in's failure propagates."""
        try:
            return fn()
        except Exception as exc:
            plugin = self.owner(what, name)
            if plugin is None or self.manager.is_builtin(plugin):
                raise
            self.manager.report_failure(plugin, f"{what} {name!r}", exc)
            return default

    def _registry(self, hook: str, what: str) -> dict[str, Factory]:
        if hook in self._cache:
            return dict(self._cache[hook])
        owners: dict[str, str] = {}
        registry: dict[str, Factory] = {}
        for plugin, result in self._collect(hook):
            for name, factory in result.items():
                if name in owners:
                    raise PluginError(
                        f"{what} {name!r} is registered by both {owners[name]!r} and "
                        f"{plugin or _WRAPPER!r}; "
                        f"disable one of them (replacing a built-in means disabling it first)"
                    )
                owners[name] = plugin or _WRAPPER
                registry[name] = factory
        self._cache[hook] = registry
        return dict(registry)

    def _cached(self, key: str, build: Callable[[], T]) -> T:
        if key not in self._cache:
            self._cache[key] = build()
        result: T = self._cache[key]
        return result

    # ------------------------------------------------------------------ configuration / lifecycle
    def settings_models(self) -> dict[str, type[BaseModel]]:
        return {plugin: model for plugin, model in self._collect("goclaw_settings_model") if plugin}

    def services(self, engine: Host) -> dict[str, Any]:
        owners: dict[str, str] = {}
        services: dict[str, Any] = {}
        for plugin, result in self._collect("goclaw_services", engine=engine):
            for name, service in result.items():
                if name in owners:
                    raise PluginError(
                        f"service {name!r} is provided by both {owners[name]!r} and {plugin or _WRAPPER!r}"
                    )
                owners[name] = plugin or _WRAPPER
                services[name] = service
        return services

    def startup(self, engine: Host) -> None:
        self._collect("goclaw_startup", engine=engine)

    def agent_created(self, engine: Host, agent: Agent) -> None:
        self._collect("goclaw_agent_created", engine=engine, agent=agent)

    def cli_commands(self) -> list[tuple[str, CommandSpec]]:
        """``[(plugin, spec)]`` from ``goclaw_cli_commands``, sorted by command name."""
        found: list[tuple[str, CommandSpec]] = []
        for plugin, result in self._collect("goclaw_cli_commands"):
            for spec in result:
                if not isinstance(spec, CommandSpec):
                    raise PluginError(
                        f"plugin {plugin or _WRAPPER!r}: goclaw_cli_commands returned "
                        f"{type(spec).__name__}, not a CommandSpec"
                    )
                found.append((plugin or _WRAPPER, spec))
        return sorted(found, key=lambda pair: (pair[1].name, pair[0]))

    def register_commands(self, cli: click.Group) -> None:
        self._collect("goclaw_register_commands", cli=cli)

    def http_routes(self, engine: Host, auth: Callable[..., Any]) -> list[tuple[str, Any]]:
        """``[(plugin, router)]`` from ``goclaw_http_routes``, in plugin-name order."""
        found = [
            (plugin or _WRAPPER, r)
            for plugin, r in self._collect("goclaw_http_routes", engine=engine, auth=auth)
        ]
        return sorted(found, key=lambda pair: pair[0])

    # ------------------------------------------------------------------ storage
    def schema_components(self) -> list[SchemaComponent]:
        """Every enabled plugin's tables and migration chain, sorted by component name."""
        return self._cached(
            "schema",
            lambda: self._items("goclaw_schema", lambda c: c.name, "schema component"),
        )

    def forget_rows(self, engine: Host, scope: ForgetScope, connection: Any) -> list[ForgetStep]:
        """Every plugin's erasure steps, plugins in name order, each plugin's in its order."""
        pairs = self._collect("goclaw_forget_rows", engine=engine, scope=scope, connection=connection)
        steps: list[ForgetStep] = []
        for _plugin, result in sorted(pairs, key=lambda p: p[0] or ""):
            steps.extend(result)
        return steps

    # ------------------------------------------------------------------ prompt
    def prompt_sections(self) -> list[PromptSection]:
        return self._cached(
            "sections",
            lambda: self._items("goclaw_prompt_sections", lambda s: (s.order, s.name), "prompt section"),
        )

    def prompt_modes(self) -> dict[str, PromptMode]:
        return self._cached(
            "modes",
            lambda: {m.name: m for m in self._items("goclaw_prompt_modes", lambda m: m.name, "prompt mode")},
        )

    def resolve_prompt_mode(self, request: PromptRequest) -> str | None:
        """First answer wins; a third-party resolver that raises is reported and skipped."""
        result: str | None = self.manager.pm.hook.goclaw_resolve_prompt_mode(request=request)
        return result

    def context_file_sources(self) -> list[ContextFileSource]:
        return self._cached(
            "sources",
            lambda: self._items(
                "goclaw_context_file_sources", lambda s: (s.order, s.name), "context-file source"
            ),
        )

    def virtual_context_files(self, ctx: PromptContext) -> list[ContextFile]:
        files: list[ContextFile] = []
        for _plugin, result in self._collect("goclaw_virtual_context_files", ctx=ctx):
            files.extend(result)
        return files

    def slash_commands(self) -> list[SlashCommand]:
        return self._cached(
            "slash",
            lambda: self._items("goclaw_slash_commands", lambda c: (c.order, c.name), "slash command"),
        )

    # ------------------------------------------------------------------ skills
    def skill_tiers(self) -> list[SkillTier]:
        return self._cached(
            "tiers",
            lambda: self._items("goclaw_skill_tiers", lambda t: (t.priority, t.name), "skill tier"),
        )

    # ------------------------------------------------------------------ registries
    def search_backends(self) -> dict[str, Factory]:
        return self._registry("goclaw_search_backends", "search backend")

    def embedding_providers(self) -> dict[str, Factory]:
        return self._registry("goclaw_embedding_providers", "embedding provider")

    def tokenizers(self) -> dict[str, Factory]:
        return self._registry("goclaw_tokenizers", "tokenizer")

    def llm_providers(self) -> dict[str, Factory]:
        return self._registry("goclaw_llm_providers", "LLM provider")

    # ------------------------------------------------------------------ workers and tools
    def consolidation_workers(self) -> list[ConsolidationWorker]:
        return self._cached(
            "workers",
            lambda: self._items("goclaw_consolidation_workers", lambda w: w.name, "consolidation worker"),
        )

    def tools(self, engine: Host) -> list[Tool]:
        return self._items("goclaw_tools", lambda t: t.name, "tool", engine=engine)
