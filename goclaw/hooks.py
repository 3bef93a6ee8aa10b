"""The facade through which goclaw calls every hook (``host.hooks``, its contract
:class:`~goclaw.contracts.host.HookCalls`): typed methods for the kernel's hooks, generic ones for
the hooks a plugin declares for itself. Nothing else in goclaw touches ``pm.hook.*``; isolation
and attribution happen inside pluggy's own call loop (:mod:`goclaw.hookcall`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from goclaw.contracts.commands import CommandSpec
from goclaw.errors import PluginError
from goclaw.hookcall import attribute

if TYPE_CHECKING:
    import click
    from pydantic import BaseModel

    from goclaw.contracts.events import ConsolidationWorker
    from goclaw.contracts.hooks import Tool
    from goclaw.contracts.host import Factory, Host
    from goclaw.contracts.schema import ForgetScope, ForgetStep, SchemaComponent
    from goclaw.contracts.store import Agent
    from goclaw.plugins import GoclawPluginManager

T = TypeVar("T")
_WRAPPER = "a hook wrapper"


class Hooks:
    """Implements :class:`~goclaw.contracts.host.HookCalls` (whose docstrings describe the
    generic calls), plus the kernel's typed calls."""

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
        (:mod:`goclaw.hookcall`); what a wrapper made up has the wrapper's plugin as owner when
        exactly one third-party wrapper is registered, else ``None``."""
        caller = getattr(self.manager.pm.hook, hook)
        with self.manager.recorder.frame(hook) as recorded:
            results = caller(**kwargs)
        if not isinstance(results, list):
            raise PluginError(f"hook {hook} returned {type(results).__name__}, not a list (a hook wrapper?)")
        wrappers = {
            impl.plugin_name
            for impl in caller.get_hookimpls()
            if (impl.wrapper or impl.hookwrapper) and not self.manager.is_builtin(impl.plugin_name)
        }
        sole = next(iter(wrappers)) if len(wrappers) == 1 else None
        return [(owner, result) for owner, result in attribute(results, recorded, sole) if result is not None]

    def call(self, hook: str, **kwargs: Any) -> list[tuple[str | None, Any]]:
        caller = getattr(self.manager.pm.hook, hook, None)
        if caller is None or caller.spec is None:
            return []
        return self._collect(hook, **kwargs)

    def first(self, hook: str, **kwargs: Any) -> Any:
        caller = getattr(self.manager.pm.hook, hook, None)
        if caller is None or caller.spec is None:
            return None
        return caller(**kwargs)

    def implementers(self, hook: str) -> list[object]:
        caller = getattr(self.manager.pm.hook, hook, None)
        return [] if caller is None else [impl.plugin for impl in caller.get_hookimpls()]

    def owner(self, what: str, name: str) -> str | None:
        """The plugin that contributed item ``name`` of kind ``what`` (e.g. "prompt section")."""
        return self._owners.get((what, name))

    def guard(self, what: str, name: str, fn: Callable[[], T], default: T) -> T:
        try:
            return fn()
        except Exception as exc:
            plugin = self.owner(what, name)
            if plugin is None or self.manager.is_builtin(plugin):
                raise
            self.manager.report_failure(plugin, f"{what} {name!r}", exc)
            return default

    def items(
        self, hook: str, what: str, key: Callable[[Any], Any] = lambda item: item.name, **kwargs: Any
    ) -> list[Any]:
        cached = not kwargs
        if cached and hook in self._cache:
            return list(self._cache[hook])
        items: list[Any] = []
        for plugin, name, item in self._unique(hook, what, "provided", "; disable one of them", **kwargs):
            if plugin is not None:
                self._owners[(what, name)] = plugin
            items.append(item)
        items.sort(key=key)
        if cached:
            self._cache[hook] = items
        return list(items)

    def registry(self, hook: str, what: str) -> dict[str, Factory]:
        if hook not in self._cache:
            hint = "; disable one of them (or declare the replacement in its manifest's REPLACES)"
            self._cache[hook] = self._merged(hook, what, "registered", hint)
        return dict(self._cache[hook])

    def _merged(self, hook: str, what: str, verb: str, hint: str = "", **kwargs: Any) -> dict[str, Any]:
        """The ``{name: value}`` answers of ``hook`` merged; a name given twice is an error."""
        return {name: value for _, name, value in self._unique(hook, what, verb, hint, **kwargs)}

    def _unique(
        self, hook: str, what: str, verb: str, hint: str, **kwargs: Any
    ) -> Iterator[tuple[str | None, str, Any]]:
        """``(plugin, name, item)`` for each item of ``hook``'s answers (lists of named items, or
        ``{name: item}`` dicts); a name given twice is an error naming both plugins."""
        owners: dict[str, str] = {}
        for plugin, result in self.call(hook, **kwargs):
            named = result.items() if isinstance(result, dict) else ((item.name, item) for item in result)
            for name, item in named:
                if name in owners:
                    raise PluginError(
                        f"{what} {name!r} is {verb} by both {owners[name]!r} and {plugin or _WRAPPER!r}{hint}"
                    )
                owners[name] = plugin or _WRAPPER
                yield plugin, name, item

    # ------------------------------------------------------------------ configuration / lifecycle
    def settings_models(self) -> dict[str, type[BaseModel]]:
        return {plugin: model for plugin, model in self._collect("goclaw_settings_model") if plugin}

    def services(self, engine: Host) -> dict[str, Any]:
        return self._merged("goclaw_services", "service", "provided", engine=engine)

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

    # ------------------------------------------------------------------ storage
    def schema_components(self) -> list[SchemaComponent]:
        """Every enabled plugin's tables and migration chain, sorted by component name."""
        return self.items("goclaw_schema", "schema component")

    def forget_rows(self, engine: Host, scope: ForgetScope, connection: Any) -> list[ForgetStep]:
        """Every plugin's erasure steps, plugins in name order, each plugin's in its order."""
        pairs = self._collect("goclaw_forget_rows", engine=engine, scope=scope, connection=connection)
        steps: list[ForgetStep] = []
        for _plugin, result in sorted(pairs, key=lambda p: p[0] or ""):
            steps.extend(result)
        return steps

    def forgotten(self, engine: Host, scope: ForgetScope) -> None:
        self._collect("goclaw_forgotten", engine=engine, scope=scope)

    # ------------------------------------------------------------------ registries
    def embedding_providers(self) -> dict[str, Factory]:
        return self.registry("goclaw_embedding_providers", "embedding provider")

    def tokenizers(self) -> dict[str, Factory]:
        return self.registry("goclaw_tokenizers", "tokenizer")

    def llm_providers(self) -> dict[str, Factory]:
        return self.registry("goclaw_llm_providers", "LLM provider")

    # ------------------------------------------------------------------ workers and tools
    def consolidation_workers(self) -> list[ConsolidationWorker]:
        return self.items("goclaw_consolidation_workers", "consolidation worker")

    def tools(self, engine: Host) -> list[Tool]:
        return self.items("goclaw_tools", "tool", engine=engine)
