"""Commands declared, listed and imported only when they run: :class:`LazyGroup`, the root
``goclaw`` group, holds the kernel's declarations (:mod:`goclaw.cli.registry`) and the plugins'
(their manifests' ``COMMANDS`` or hook ``goclaw_cli_commands``); ``goclaw --help`` lists them
from the declarations alone, and a disabled plugin's command fails with one line naming it."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from goclaw.contracts.commands import CommandSpec
from goclaw.errors import FeatureUnavailableError, GoclawError, PluginError

if TYPE_CHECKING:
    from goclaw.config import PluginsConfig
    from goclaw.plugins import Installed


def block_reason(config: PluginsConfig, plugin: str, installed: Installed | None = None) -> str | None:
    """Why ``plugin`` is not loaded under ``config`` (``[plugins] disable / only / autoload``), or
    None: the rule the plugin manager applies before it imports anything
    (:meth:`goclaw.plugins.Installed.blocked`). A bad name in the settings is left to the
    engine, which reports it when the command opens it."""
    from goclaw.plugins import discover

    try:
        why = (installed or discover()).blocked(config).get(plugin) if plugin else None
    except PluginError:
        return None
    if why == "disable":
        return f"which is disabled {_source('DISABLE')}"
    if why == "only":
        return f"which plugins.only leaves out {_source('ONLY')}"
    if why == "autoload":
        return "which is a third-party plugin, and those are not loaded (plugins.autoload is off)"
    return f"which is {why}" if why else None


def _source(key: str) -> str:
    """Where ``plugins.<key>`` came from: an environment variable (matched without regard to
    case, ``GOCLAW_PLUGINS`` holding the whole table included) beats the file."""
    for env, value in os.environ.items():
        name = env.upper()
        if name == f"GOCLAW_PLUGINS__{key}" or (name == "GOCLAW_PLUGINS" and f'"{key.lower()}"' in value):
            return f"by {env}"
    return "in goclaw.toml"


class LazyGroup(click.Group):
    """A ``click.Group`` whose commands are :class:`CommandSpec` declarations, imported on use."""

    def __init__(self, *args: Any, specs: Iterable[CommandSpec] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.kernel_specs: dict[str, CommandSpec] = {}
        for spec in specs:
            if spec.name in self.kernel_specs:
                raise ValueError(f"command {spec.name!r} is declared twice")
            self.kernel_specs[spec.name] = spec
        self.plugin_specs: dict[str, CommandSpec] = {}
        self.builtin_plugins: set[str] = set()
        self.installed: Installed | None = None  # the run's plugins, when it read them
        self.collected = False
        # Collects the plugins' declarations for a command line (goclaw.cli sets it).
        self.collect: Callable[[list[str]], None] | None = None
        self.conflicts: dict[str, str] = {}
        self.reason: Callable[[str], str | None] = lambda plugin: None  # why a plugin is not loaded
        self._loaded: dict[str, tuple[Any, click.Command]] = {}  # key -> (its module, command)

    # ------------------------------------------------------------------ declarations
    def spec(self, name: str) -> CommandSpec | None:
        """The declaration a run of ``goclaw <name>`` uses."""
        return self.kernel_specs.get(name) or self.plugin_specs.get(name)

    def clear_plugin_specs(self) -> None:
        """Forget the plugins' declarations (each CLI run collects its own)."""
        self.plugin_specs = {}
        self.builtin_plugins = set()
        self.conflicts = {}

    def set_plugin_specs(
        self,
        contributions: Iterable[tuple[str, CommandSpec]],
        reason: Callable[[str], str | None] = lambda plugin: None,
        builtin_plugins: Iterable[str] = (),
    ) -> None:
        """Replace the plugins' declarations with ``[(plugin, spec)]`` (one CLI run's), loaded
        plugins' and not loaded ones' alike; ``reason(plugin)`` says why a plugin is not loaded
        (None: it is), and is asked only when two plugins declare one name.

        A name the kernel uses, or that two loaded plugins declare, is a conflict: running that
        command then fails naming both, ``--help`` still works. A plugin that is not loaded
        gives its names way to one that is: that is how a feature is replaced (disable
        ``goclaw.memory``, install a plugin with its own ``goclaw memory``).
        """
        self.clear_plugin_specs()
        self.collected, self.reason = True, reason
        self.builtin_plugins = set(builtin_plugins)
        by_name: dict[str, list[CommandSpec]] = {}
        for plugin, spec in contributions:
            by_name.setdefault(spec.name, []).append(replace(spec, plugin=plugin))
        for name, specs in by_name.items():
            if name in self.kernel_specs:
                owners = ["the goclaw kernel", specs[0].plugin]
            elif len(specs) > 1:
                loaded = [s for s in specs if reason(s.plugin) is None]
                if len(loaded) <= 1:
                    self.plugin_specs[name] = (loaded or specs)[0]
                    continue
                owners = [loaded[0].plugin, loaded[1].plugin]
            else:
                self.plugin_specs[name] = specs[0]
                continue
            self.conflicts[name] = (
                f"command 'goclaw {name}' is provided by both {owners[0]!r} and {owners[1]!r}; "
                "disable one of them"
            )

    # ------------------------------------------------------------------ click
    def _collect(self) -> None:
        """Used without the CLI's entry point (the generated reference, tests): collect the
        plugins' declarations now."""
        if not self.collected and self.collect is not None:
            self.collect([])

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._collect()
        # "<group> <name>" declarations are subcommands of a KernelGroup, not top-level commands
        return sorted({*self.commands, *self.kernel_specs, *(n for n in self.plugin_specs if " " not in n)})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self._collect()
        if cmd_name in self.conflicts:
            raise PluginError(self.conflicts[cmd_name])
        if cmd_name in self.commands:  # added eagerly (goclaw_register_commands)
            return self.commands[cmd_name]
        spec = self.spec(cmd_name)
        if spec is None:
            return None
        if spec.plugin:
            reason = _block_reason_for(ctx, spec.plugin, self.installed)
            if reason is not None:
                raise FeatureUnavailableError(
                    f"'goclaw {spec.name}' is provided by plugin {spec.plugin}, {reason}"
                )
        return self.load(spec)

    def load(self, spec: CommandSpec) -> click.Command:
        """Import the declared command (once per declaration, and again if its module was
        unloaded or replaced since, e.g. a plugin reinstalled in a long-lived process)."""
        key = f"{spec.plugin}|{spec.target}"
        module_name, _, attribute = spec.target.partition(":")
        cached = self._loaded.get(key)
        if cached is not None and sys.modules.get(module_name) is cached[0]:
            return cached[1]
        builtin = not spec.plugin or spec.plugin in self.builtin_plugins
        try:
            command = getattr(importlib.import_module(module_name), attribute)
        except Exception as exc:
            if builtin:
                raise  # our bug, not the user's
            raise PluginError(
                f"command 'goclaw {spec.name}' of plugin {spec.plugin!r} cannot be loaded from "
                f"{spec.target}: {type(exc).__name__}: {exc}"
            ) from None
        if not isinstance(command, click.Command):
            raise PluginError(
                f"command 'goclaw {spec.name}' of plugin {spec.plugin or 'goclaw'!r}: "
                f"{spec.target} is a {type(command).__name__}, not a click command"
            )
        self._loaded[key] = (sys.modules.get(module_name), command)
        return command

    def all_commands(self) -> dict[str, click.Command]:
        """Every command by name, each declaration imported, whatever is disabled (for the
        generated CLI reference and the tests that walk the whole tree)."""
        found: dict[str, click.Command] = {}
        for name in self.list_commands(click.Context(self)):
            spec = self.spec(name)
            found[name] = self.commands[name] if name in self.commands or spec is None else self.load(spec)
        return found

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing, with a declaration's help taken from the declaration (no import);
        a plugin that is not loaded lists no command (running one says why it is missing)."""
        rows: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            eager, spec = self.commands.get(name), self.spec(name)
            if eager is not None:
                rows += [] if eager.hidden else [(name, eager)]
            elif spec is not None and not (spec.plugin and self.reason(spec.plugin)):
                rows.append((name, click.Command(name, help=spec.help)))  # the declared line, no import
        if not rows:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in rows)
        with formatter.section("Commands"):
            formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in rows])


class KernelGroup(LazyGroup):
    """A kernel command group that plugins add subcommands to: a plugin's declaration named
    ``"<group> <name>"`` (``CommandSpec("workers prune", ...)``) is this group's ``<name>``,
    imported only when it runs, with the root group's rules (a disabled plugin's subcommand
    answers in one line naming it; a name the kernel's group has is a conflict)."""

    def _collect(self) -> None:
        from goclaw.cli import cli

        cli._collect()
        prefix = f"{self.name} "
        subs = {n.removeprefix(prefix): s for n, s in cli.plugin_specs.items() if n.startswith(prefix)}
        self.installed, self.builtin_plugins, self.reason = cli.installed, cli.builtin_plugins, cli.reason
        self.plugin_specs = {n: s for n, s in subs.items() if n not in self.commands}
        self.conflicts = {n.removeprefix(prefix): m for n, m in cli.conflicts.items() if n.startswith(prefix)}
        for name in set(subs) & set(self.commands):
            self.conflicts[name] = (
                f"command 'goclaw {self.name} {name}' is provided by both the goclaw kernel and "
                f"{subs[name].plugin!r}; disable one of them"
            )


def _block_reason_for(ctx: click.Context, plugin: str, installed: Installed | None) -> str | None:
    """Is ``plugin`` blocked in this run's workspace? A settings problem is left to the command
    (the engine reports it when it opens), so ``goclaw memory --help`` works with a broken file."""
    from goclaw.config import load_settings

    workspace = ctx.find_root().params.get("workspace") or Path(".")
    try:
        settings = load_settings(Path(workspace).resolve())
    except GoclawError:
        return None
    return block_reason(settings.plugins, plugin, installed)
