"""The plugin manager: built-ins first, then entry points (group ``goclaw``).

There is no global manager: :func:`build_plugin_manager` makes a fresh one for each
:class:`goclaw.Engine` (tests get their own). Built-ins are registered by import path from
:data:`DEFAULT_PLUGINS` under stable names ``goclaw.<feature>``; ``[plugins] disable`` blocks a
name before anything is imported; an unknown name in ``disable``/``only`` is an error listing
the known names; the essential plugins cannot be disabled. A third-party plugin that fails to
import or register is recorded as ``failed`` and skipped, unless ``plugins.strict``.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any

import pluggy

from goclaw import hookspecs
from goclaw.errors import ConfigError, PluginError
from goclaw.hookcall import CallRecorder, instrument

if TYPE_CHECKING:
    from pydantic import BaseModel

    from goclaw.config import PluginsConfig

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "goclaw"
AUTOLOAD_ENV = "GOCLAW_DISABLE_PLUGIN_AUTOLOAD"

# name -> module path. Order here is irrelevant: every hook result is sorted explicitly.
DEFAULT_PLUGINS: dict[str, str] = {
    "goclaw.context_files": "goclaw_context_files.plugin",
    "goclaw.bootstrap": "goclaw_bootstrap.seeding",
    "goclaw.prompt": "goclaw_prompt.plugin",
    "goclaw.virtual_files": "goclaw_virtual_files.plugin",
    # issue 3: each prompt section and each virtual file is its own default plugin.
    "goclaw.section.identity": "goclaw_prompt.sections.identity",
    "goclaw.section.bootstrap": "goclaw_prompt.sections.bootstrap",
    "goclaw.section.tooling": "goclaw_prompt.sections.tooling",
    "goclaw.section.safety": "goclaw_prompt.sections.safety",
    "goclaw.section.workspace": "goclaw_prompt.sections.workspace",
    "goclaw.section.sandbox": "goclaw_prompt.sections.sandbox",
    "goclaw.section.user_identity": "goclaw_prompt.sections.user_identity",
    "goclaw.section.current_time": "goclaw_prompt.sections.current_time",
    "goclaw.section.messaging": "goclaw_prompt.sections.messaging",
    "goclaw.section.extra_context": "goclaw_prompt.sections.extra_context",
    "goclaw.section.project_context": "goclaw_prompt.sections.project_context",
    "goclaw.section.silent_replies": "goclaw_prompt.sections.silent_replies",
    "goclaw.section.subagent_spawning": "goclaw_prompt.sections.subagent_spawning",
    "goclaw.section.runtime": "goclaw_prompt.sections.runtime",
    "goclaw.virtual.delegation": "goclaw_virtual_files.delegation",
    "goclaw.virtual.team": "goclaw_virtual_files.team",
    "goclaw.virtual.availability": "goclaw_virtual_files.availability",
    "goclaw.skills": "goclaw_skills.plugin",
    "goclaw.skills.tier.workspace": "goclaw_skills.tier_workspace",
    "goclaw.skills.tier.project": "goclaw_skills.tier_project",
    "goclaw.skills.tier.personal": "goclaw_skills.tier_personal",
    "goclaw.skills.tier.global": "goclaw_skills.tier_global",
    "goclaw.skills.tier.builtin": "goclaw_skills.tier_builtin",
    "goclaw.slash_commands": "goclaw_skills.slash",
    "goclaw.memory": "goclaw_memory.plugin",
    # issue 13 item 7: the optional LanceDB search backend (`backend = "lancedb"`, extra `lancedb`).
    "goclaw.lancedb": "goclaw_lancedb.plugin",
    "goclaw.embeddings": "goclaw_embeddings.plugin",
    "goclaw.llm": "goclaw_llm.plugin",
    "goclaw.episodic": "goclaw_episodic.plugin",
    "goclaw.kg": "goclaw_kg.plugin",
    "goclaw.channel_memory": "goclaw_channel_memory.plugin",
    "goclaw.workers.episodic": "goclaw_episodic.worker",
    "goclaw.workers.semantic": "goclaw_kg.semantic",
    "goclaw.workers.dedup": "goclaw_kg.dedup",
    "goclaw.workers.dreaming": "goclaw_episodic.dreaming",
    "goclaw.workers.retention": "goclaw_episodic.retention",
}

# issue 13 item 4: ``goclaw.consolidation`` was cut along the spec's nouns. The old name still
# works in ``[plugins] disable``/``only`` and its ``[plugins.consolidation]`` table still
# configures the new plugins (:func:`route_renamed_tables`), each with a one-line deprecation
# warning. The workers were always plugins of their own and keep their names.
RENAMED_PLUGINS: dict[str, tuple[str, ...]] = {
    "goclaw.consolidation": ("goclaw.episodic", "goclaw.kg", "goclaw.channel_memory"),
}
# A setting that moved to another plugin's table: (old table, key) -> new table. The context-file
# cache is the essential context_files plugin's, so it must not depend on goclaw.bootstrap being on.
MOVED_SETTINGS: dict[tuple[str, str], str] = {("bootstrap", "cache_seconds"): "context_files"}

# The kernel cannot serve its contract without these; disabling one is a loud error.
ESSENTIAL_PLUGINS: frozenset[str] = frozenset({"goclaw.context_files", "goclaw.prompt"})


@dataclass
class PluginRecord:
    """One row of ``goclaw plugins``."""

    name: str
    status: str  # active | blocked | failed
    builtin: bool
    module: str = ""
    distribution: str | None = None
    version: str | None = None
    hooks: list[str] = field(default_factory=list)
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "hooks": self.hooks,
            "status": self.status,
            "builtin": self.builtin,
            "error": self.error,
        }


class GoclawPluginManager:
    """A pluggy ``PluginManager`` plus the records ``goclaw plugins`` shows."""

    def __init__(
        self,
        config: PluginsConfig,
        extra_plugins: Iterable[tuple[str, object]] = (),
        *,
        include_builtins: bool = True,
    ) -> None:
        self.config = config
        self.include_builtins = include_builtins
        self.pm = pluggy.PluginManager(hookspecs.NAME)
        self.pm.add_hookspecs(hookspecs)
        self.records: dict[str, PluginRecord] = {}
        self.recorder = CallRecorder()
        self._extra = list(extra_plugins)

    # ------------------------------------------------------------------ loading
    def load(self) -> None:
        autoload = self.config.autoload and os.environ.get(AUTOLOAD_ENV, "").strip() not in {"1", "true"}
        entry_points = list(metadata.entry_points(group=ENTRY_POINT_GROUP))
        known = sorted(
            {*DEFAULT_PLUGINS, *(ep.name for ep in entry_points), *(name for name, _ in self._extra)}
        )
        blocked = self._blocked_names(known)

        for name, module_path in sorted(DEFAULT_PLUGINS.items()):
            if name in blocked or not self.include_builtins:
                self.records[name] = PluginRecord(name, "blocked", True, module_path, "goclaw", _version())
                continue
            module = importlib.import_module(module_path)
            self.pm.register(module, name=name)
            self.records[name] = PluginRecord(name, "active", True, module_path, "goclaw", _version())
            instrument(self, module)

        for name, obj in self._extra:
            if name in blocked:
                self.records[name] = PluginRecord(name, "blocked", False)
                continue
            self._register_third_party(name, lambda obj=obj: obj, None)

        for ep in sorted(entry_points, key=lambda e: e.name):
            dist = getattr(ep, "dist", None)
            if ep.name in self.records:
                self._fail(ep.name, f"entry point name clashes with an existing plugin ({ep.value})", dist)
                continue
            if ep.name in blocked or not autoload:
                status = "blocked"
                self.records[ep.name] = PluginRecord(
                    ep.name,
                    status,
                    False,
                    ep.value,
                    dist.name if dist else None,
                    dist.version if dist else None,
                )
                continue
            self._register_third_party(ep.name, ep.load, dist, ep.value)

        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"a plugin implements an unknown hook: {exc}") from None
        for name, record in self.records.items():
            plugin = self.pm.get_plugin(name)
            if plugin is not None and record.status == "active":
                record.hooks = sorted(h.name for h in self.pm.get_hookcallers(plugin) or [])

    def _blocked_names(self, known: list[str]) -> set[str]:
        # The CLI's command-only manager (no built-ins) stays quiet: the engine's warns.
        warn = self.include_builtins
        disable = _renamed("disable", self.config.disable, warn)
        only = None if self.config.only is None else _renamed("only", self.config.only, warn)
        for label, names in (("disable", disable), ("only", only or [])):
            unknown = [n for n in names if n not in known]
            if unknown:
                raise PluginError(
                    f"unknown plugin name(s) in plugins.{label}: {', '.join(unknown)}; "
                    f"known plugins: {', '.join(known)}"
                )
        essential_disabled = sorted(set(disable) & ESSENTIAL_PLUGINS)
        if essential_disabled:
            raise PluginError(
                f"plugin(s) {', '.join(essential_disabled)} are essential and cannot be disabled; "
                "replace their behaviour with a plugin that implements the same hooks instead"
            )
        blocked = set(disable)
        if only is not None:
            blocked |= {n for n in known if n not in only and n not in ESSENTIAL_PLUGINS}
        return blocked

    def _register_third_party(self, name: str, load: Any, dist: Any, module: str = "") -> None:
        try:
            obj = load()
            self.pm.register(obj, name=name)
            # Validate now so that one bad plugin cannot break check_pending for everyone.
            self.pm.check_pending()
        except Exception as exc:
            if self.pm.get_plugin(name) is not None:
                self.pm.unregister(name=name)
            if self.config.strict:
                raise PluginError(f"plugin {name!r} failed to load: {type(exc).__name__}: {exc}") from exc
            self._fail(name, f"{type(exc).__name__}: {exc}", dist, module)
            return
        self.records[name] = PluginRecord(
            name, "active", False, module, dist.name if dist else None, dist.version if dist else None
        )
        instrument(self, obj)

    def _fail(self, name: str, error: str, dist: Any, module: str = "") -> None:
        log.warning("plugin %s failed and was skipped: %s", name, error)
        self.records[name] = PluginRecord(
            name,
            "failed",
            False,
            module,
            dist.name if dist else None,
            dist.version if dist else None,
            error=" ".join(error.split()),
        )

    def report_failure(self, name: str, hook: str, exc: BaseException) -> None:
        """A third-party hook implementation raised: mark the plugin failed (or re-raise)."""
        message = f"{hook}: {type(exc).__name__}: {exc}"
        if self.config.strict:
            raise PluginError(f"plugin {name!r} failed in {message}") from exc
        record = self.records.get(name)
        if record is not None:
            record.status = "failed"
            record.error = " ".join(message.split())
        log.warning("plugin %s failed in %s and was skipped", name, message)

    def is_builtin(self, name: str) -> bool:
        record = self.records.get(name)
        return bool(record and record.builtin)

    def active_names(self) -> list[str]:
        return sorted(n for n, r in self.records.items() if r.status == "active")


def _renamed(label: str, names: Iterable[str], warn: bool) -> list[str]:
    """``names`` with each renamed plugin replaced by its successors (a deprecation warning)."""
    out: list[str] = []
    for name in names:
        successors = RENAMED_PLUGINS.get(name, (name,))
        if name in RENAMED_PLUGINS and warn:
            log.warning(
                f"deprecated: plugins.{label} names {name!r}, now split into {', '.join(successors)}; "
                "use the new names"
            )
        out.extend(n for n in successors if n not in out)
    return out


def route_renamed_tables(tables: dict[str, Any], models: dict[str, type[BaseModel]]) -> dict[str, Any]:
    """The feature tables with a renamed plugin's table (``[plugins.consolidation]``) routed to
    its successors: each key goes to every successor whose settings model declares it; a value in
    the successor's own table wins. ``models`` maps feature names to the active plugins' models.
    A key no successor knows is an error when all of them are active (else it may belong to a
    disabled one and is ignored, as any disabled plugin's table is)."""
    out = dict(tables)
    for old_name, new_names in RENAMED_PLUGINS.items():
        old, new = _feature(old_name), [_feature(n) for n in new_names]
        table = out.pop(old, None)
        if table is None:
            continue
        if not isinstance(table, dict):
            raise ConfigError(f"plugins.{old}: must be a table, got {type(table).__name__}")
        log.warning(
            f"deprecated: [plugins.{old}] is split into {', '.join(f'[plugins.{n}]' for n in new)}; "
            "move each key to its new table"
        )
        for key, value in table.items():
            owners = [n for n in new if n in models and key in models[n].model_fields]
            if not owners and all(n in models for n in new):
                known = sorted({k for n in new for k in models[n].model_fields})
                raise ConfigError(f"[plugins.{old}]: unknown key {key!r}; known keys: {', '.join(known)}")
            for feature in owners:
                current = out.get(feature)
                merged = dict(current) if isinstance(current, dict) else {}
                merged.setdefault(key, value)
                out[feature] = merged if current is None or isinstance(current, dict) else current
    return _route_moved_settings(out)


def _route_moved_settings(tables: dict[str, Any]) -> dict[str, Any]:
    """Each :data:`MOVED_SETTINGS` key found in its old table moves to its new one (a value in
    the new table wins), with a one-line deprecation warning."""
    out = dict(tables)
    for (old, key), new in MOVED_SETTINGS.items():
        table = out.get(old)
        if not isinstance(table, dict) or key not in table:
            continue
        log.warning(f"deprecated: [plugins.{old}] {key} is now [plugins.{new}] {key}; move it there")
        rest = dict(table)
        value = rest.pop(key)
        out[old] = rest
        target = out.get(new)
        if target is None or isinstance(target, dict):
            out[new] = {key: value, **(target or {})}
    return out


def _feature(plugin_name: str) -> str:
    return plugin_name.removeprefix("goclaw.")


@functools.cache  # read for every built-in plugin of every engine: 2 ms a call
def _version() -> str:
    try:
        return metadata.version("goclaw")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def has_entry_points() -> bool:
    return bool(metadata.entry_points(group=ENTRY_POINT_GROUP))


def build_plugin_manager(
    config: PluginsConfig,
    extra_plugins: Iterable[tuple[str, object]] = (),
    *,
    include_builtins: bool = True,
) -> GoclawPluginManager:
    """A fresh, loaded manager. ``include_builtins=False`` loads only third-party plugins
    (the CLI uses it to find plugin commands without importing every built-in)."""
    manager = GoclawPluginManager(config, extra_plugins, include_builtins=include_builtins)
    manager.load()
    return manager
