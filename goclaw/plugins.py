"""The plugin manager: every plugin, built-ins included, comes from an entry point (group ``goclaw``).

There is no global manager: :func:`build_plugin_manager` makes a fresh one for each
:class:`goclaw.Engine` (tests get their own). The kernel names no plugin. The ``goclaw``
distribution's own entry points are the built-ins: they register first, under their entry-point
names (``goclaw.<feature>``), and ``plugins.autoload = false`` / ``GOCLAW_DISABLE_PLUGIN_AUTOLOAD``
never skip them (those switches govern third-party distributions only). ``[plugins] disable``
blocks a name before its module is imported; an unknown name in ``disable``/``only`` is an error
listing the known names. A third-party plugin that fails to import or register is recorded as
``failed`` and skipped, unless ``plugins.strict``.

What the kernel must know of a plugin *before* importing it, the plugin declares in a
**manifest**: a light module (it imports nothing heavy) named by an entry point of group
``goclaw.manifests`` under the plugin's own name. The kernel reads these module attributes, all
optional (:class:`Installed`):

* ``SERVICES`` — the service names the plugin contributes (``goclaw_services``), so that
  ``engine.memory`` with the plugin off says which plugin is off and why;
* ``COMMANDS`` — its ``goclaw`` commands as :class:`~goclaw.contracts.commands.CommandSpec`
  declarations: ``goclaw --help`` lists them without importing the plugin, and a disabled
  plugin's command says which plugin provides it (the same answer its ``goclaw_cli_commands``
  hook would give);
* ``TOKENIZERS`` — the tokenizer names the plugin registers (``goclaw_tokenizers``), so that
  the ``tokenizer`` setting naming one while the plugin is off counts characters ÷ 4, warning;
* ``HOOKSPECS`` — the module (``"package.module"``) of the hooks the plugin declares for other
  plugins to implement: added for every installed plugin, enabled or not, so an implementation
  never fails for want of its specification;
* ``ESSENTIAL`` — true for a plugin the others cannot do without: disabling it is a loud
  error and ``plugins.only`` always keeps it;
* ``REPLACES`` — the plugins this one takes the place of. An installed plugin named there (a
  third party's replacement of a built-in, ``REPLACES = ("goclaw.memory",)``) is blocked while
  this one is not: installing the replacement switches the built-in off, disabling the
  replacement switches it back on. A name no longer installed is a former plugin name this one
  was split from: such a name in ``disable`` / ``only`` stands for every plugin replacing it,
  and its old table ``[plugins.<old>]`` still configures them (each key goes to every successor
  whose settings declare it), each with a one-line deprecation warning;
* ``MOVED_SETTINGS`` — ``{key: old feature}``: a key of this plugin's table that used to live in
  another plugin's table; found there, it moves here (a value here wins), with a warning.

Manifests are declarations, not plugins: reading one imports no plugin code, so a disabled
plugin is still never imported. A plugin with nothing to declare needs no manifest.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any

from goclaw.errors import ConfigError, PluginError

if TYPE_CHECKING:
    import pluggy
    from pydantic import BaseModel

    from goclaw.config import PluginsConfig
    from goclaw.contracts.commands import CommandSpec

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "goclaw"
MANIFEST_GROUP = "goclaw.manifests"
AUTOLOAD_ENV = "GOCLAW_DISABLE_PLUGIN_AUTOLOAD"
DISTRIBUTION = "goclaw"  # whose entry points are the built-ins


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


@dataclass(frozen=True)
class Declared:
    """One installed plugin: its entry point and, when it has one, its manifest."""

    name: str
    target: str  # the entry point's value, "module" or "module:attribute"
    builtin: bool
    distribution: str | None
    version: str | None
    load: Callable[[], object]
    manifest: Any = None

    def declares(self, attribute: str, default: Any = ()) -> Any:
        return getattr(self.manifest, attribute, default) if self.manifest is not None else default

    def commands(self) -> list[CommandSpec]:
        """The manifest's command declarations, checked."""
        from goclaw.contracts.commands import CommandSpec

        specs = list(self.declares("COMMANDS"))
        for spec in specs:
            if not isinstance(spec, CommandSpec):
                raise PluginError(
                    f"plugin {self.name!r}: its manifest's COMMANDS holds {type(spec).__name__}, "
                    "not a CommandSpec"
                )
        return specs


class Installed:
    """Every installed plugin (entry points of group ``goclaw``) with its manifest, read once."""

    def __init__(self, plugins: Iterable[Declared], clashes: dict[str, str] | None = None) -> None:
        self.plugins = {p.name: p for p in plugins}
        self.clashes = dict(clashes or {})  # name -> a second entry point claiming it (skipped)
        self.aliases: dict[str, tuple[str, ...]] = {}  # former name -> its successors
        self.replaced: dict[str, tuple[str, ...]] = {}  # installed plugin -> its replacements
        for p in sorted(self.plugins.values(), key=lambda p: p.name):
            for old in p.declares("REPLACES"):
                into = self.replaced if old in self.plugins else self.aliases
                into[old] = (*into.get(old, ()), p.name)
        self.essential = frozenset(n for n, p in self.plugins.items() if p.declares("ESSENTIAL", False))

    def expand(self, label: str, names: Iterable[str], warn: bool) -> list[str]:
        """``names`` with each former plugin name replaced by the plugins replacing it."""
        out: list[str] = []
        for name in names:
            successors = self.aliases.get(name, (name,))
            if name in self.aliases and warn:
                log.warning(
                    f"deprecated: plugins.{label} names {name!r}, now split into "
                    f"{', '.join(successors)}; use the new names"
                )
            out.extend(n for n in successors if n not in out)
        return out

    def blocked(
        self, config: PluginsConfig, known: Iterable[str] = (), *, warn: bool = False
    ) -> dict[str, str]:
        """``{name: why}`` for every plugin ``config`` keeps from loading: ``"disable"``,
        ``"only"``, ``"autoload"`` (third-party distributions only) or ``"replaced by <plugin>"``
        (an active plugin's manifest ``REPLACES`` it). Raises
        :class:`PluginError` for an unknown name or an essential plugin disabled."""
        known = sorted({*self.plugins, *known})
        disable = self.expand("disable", config.disable, warn)
        only = None if config.only is None else self.expand("only", config.only, warn)
        for label, names in (("disable", disable), ("only", only or [])):
            unknown = [n for n in names if n not in known]
            if unknown:
                raise PluginError(
                    f"unknown plugin name(s) in plugins.{label}: {', '.join(unknown)}; "
                    f"known plugins: {', '.join(known)}"
                )
        essential_disabled = sorted(set(disable) & self.essential)
        if essential_disabled:
            raise PluginError(
                f"plugin(s) {', '.join(essential_disabled)} are essential and cannot be disabled; "
                "replace their behaviour with a plugin that implements the same hooks instead"
            )
        why = dict.fromkeys(disable, "disable")
        if only is not None:
            why.update(
                {n: "only" for n in known if n not in only and n not in self.essential and n not in why}
            )
        if not autoload_enabled(config):
            why.update({n: "autoload" for n, p in self.plugins.items() if not p.builtin and n not in why})
        for name, by in self.replaced.items():
            active = [n for n in by if n not in why]
            if active and name not in why:
                why[name] = f"replaced by {active[0]}"
        return why

    def declarer(self, attribute: str, value: str) -> str | None:
        """The plugin whose manifest's ``attribute`` (``SERVICES``, ``TOKENIZERS``) holds ``value``."""
        for name, p in sorted(self.plugins.items()):
            if value in p.declares(attribute):
                return name
        return None

    def route_tables(self, tables: dict[str, Any], models: dict[str, type[BaseModel]]) -> dict[str, Any]:
        """The feature tables with a former plugin's table (``[plugins.<old>]``) routed to the
        plugins replacing it, and each moved key to its new table. ``models`` maps feature names
        to the active plugins' settings models. A key of an old table that no successor knows
        is an error when all of them are active (else it may be a disabled one's, ignored as
        any disabled plugin's table is)."""
        out = dict(tables)
        for old_name, new_names in sorted(self.aliases.items()):
            old, new = feature_of(old_name), [feature_of(n) for n in new_names]
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
        for name, p in sorted(self.plugins.items()):
            for key, old in sorted(p.declares("MOVED_SETTINGS", {}).items()):
                _move_setting(out, old, key, feature_of(name))
        return out


def _move_setting(tables: dict[str, Any], old: str, key: str, new: str) -> None:
    table = tables.get(old)
    if not isinstance(table, dict) or key not in table:
        return
    log.warning(f"deprecated: [plugins.{old}] {key} is now [plugins.{new}] {key}; move it there")
    rest = dict(table)
    value = rest.pop(key)
    tables[old] = rest
    target = tables.get(new)
    if target is None or isinstance(target, dict):
        tables[new] = {key: value, **(target or {})}


def discover() -> Installed:
    """Read the installed plugins' entry points and import their manifests (not the plugins).

    A built-in's manifest that cannot be imported is our bug and raises; a third party's is
    recorded on its :class:`Declared` as absent, and the plugin itself reports the problem when
    it loads."""
    found = metadata.entry_points()
    manifests = {ep.name: ep for ep in found.select(group=MANIFEST_GROUP)}
    plugins: dict[str, Declared] = {}
    clashes: dict[str, str] = {}
    dists: dict[int, tuple[str | None, str | None]] = {}  # reading a distribution's metadata costs

    def name_and_version(dist: Any) -> tuple[str | None, str | None]:
        if dist is None:
            return None, None
        if id(dist) not in dists:
            meta = dist.metadata
            dists[id(dist)] = (meta["Name"], meta["Version"])
        return dists[id(dist)]

    for ep in sorted(found.select(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        dist_name, version = name_and_version(getattr(ep, "dist", None))
        builtin = _normalise(dist_name) == DISTRIBUTION
        if ep.name in plugins and not builtin:
            clashes[ep.name] = f"{ep.value} ({dist_name})"
            continue
        manifest = None
        mep = manifests.get(ep.name)
        mep_dist = name_and_version(getattr(mep, "dist", None))[0]
        if mep is not None and _normalise(mep_dist) == _normalise(dist_name):
            try:
                manifest = mep.load()
            except Exception:
                if builtin:
                    raise
                log.debug("manifest of plugin %s cannot be imported", ep.name, exc_info=True)
        plugins[ep.name] = Declared(ep.name, ep.value, builtin, dist_name, version, ep.load, manifest)
    return Installed(plugins.values(), clashes)


def _same(obj: object) -> object:
    return obj


def _normalise(name: str | None) -> str:
    return (name or "").lower().replace("_", "-")


def autoload_enabled(config: PluginsConfig) -> bool:
    return config.autoload and os.environ.get(AUTOLOAD_ENV, "").strip() not in {"1", "true"}


class GoclawPluginManager:
    """A pluggy ``PluginManager`` plus the records ``goclaw plugins`` shows."""

    def __init__(
        self,
        config: PluginsConfig,
        extra_plugins: Iterable[tuple[str, object]] = (),
        installed: Installed | None = None,
        select: Iterable[str] | None = None,
    ) -> None:
        """``select``: load only these installed plugins (the CLI loads the plugins whose
        commands no manifest declares); the others are neither loaded nor recorded."""
        import pluggy  # here, not at the top: goclaw --help reads manifests only

        from goclaw import hookspecs
        from goclaw.hookcall import CallRecorder

        self.config = config
        self.installed = installed if installed is not None else discover()
        self._select = None if select is None else set(select)
        self.pm: pluggy.PluginManager = pluggy.PluginManager(hookspecs.NAME)
        self.pm.add_hookspecs(hookspecs)
        self.records: dict[str, PluginRecord] = {}
        self.recorder = CallRecorder()
        self._extra = list(extra_plugins)

    # ------------------------------------------------------------------ loading
    def load(self) -> None:
        import pluggy

        from goclaw.hookcall import instrument

        installed = self.installed
        # The engine's manager says what is deprecated; the CLI's (a selection) stays quiet.
        extra = (name for name, _ in self._extra)
        blocked = installed.blocked(self.config, extra, warn=self._select is None)
        # Plugins' own hook specifications: from every installed plugin's manifest, and from
        # goclaw_add_hookspecs (historic: a plugin registered later is called at registration).
        for p in installed.plugins.values():
            self._add_hookspecs(p)
        self.pm.hook.goclaw_add_hookspecs.call_historic(kwargs={"plugin_manager": self.pm})
        chosen = [p for p in installed.plugins.values() if self._select is None or p.name in self._select]
        for p in (p for p in chosen if p.builtin):  # sorted by name
            if p.name in blocked:
                self.records[p.name] = self._record(p, "blocked")
                continue
            plugin = p.load()
            self.pm.register(plugin, name=p.name)
            self.records[p.name] = self._record(p, "active")
            instrument(self, plugin)

        for name, obj in self._extra:
            if name in blocked:
                self.records[name] = PluginRecord(name, "blocked", False)
                continue
            self._register_third_party(Declared(name, "", False, None, None, functools.partial(_same, obj)))

        for name, target in installed.clashes.items():
            log.warning("plugin %s: a second entry point of that name, %s, was skipped", name, target)
        for p in chosen:
            if p.builtin:
                continue
            if p.name in self.records:
                self._fail(p, f"entry point name clashes with an existing plugin ({p.target})")
                continue
            if p.name in blocked:
                self.records[p.name] = self._record(p, "blocked")
                continue
            self._register_third_party(p)

        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"a plugin implements an unknown hook: {exc}") from None
        for name, record in self.records.items():
            plugin = self.pm.get_plugin(name)
            if plugin is not None and record.status == "active":
                record.hooks = sorted(h.name for h in self.pm.get_hookcallers(plugin) or [])

    def _add_hookspecs(self, p: Declared) -> None:
        module = p.declares("HOOKSPECS", None)
        if not module:
            return
        try:
            self.pm.add_hookspecs(importlib.import_module(module))
        except Exception as exc:
            if p.builtin or self.config.strict:
                raise PluginError(f"plugin {p.name!r}: hook specifications {module}: {exc}") from exc
            log.warning("plugin %s: hook specifications %s skipped: %s", p.name, module, exc)

    @staticmethod
    def _record(p: Declared, status: str, error: str | None = None) -> PluginRecord:
        return PluginRecord(p.name, status, p.builtin, p.target, p.distribution, p.version, error=error)

    def _register_third_party(self, p: Declared) -> None:
        from goclaw.hookcall import instrument

        try:
            obj = p.load()
            self.pm.register(obj, name=p.name)
            # Validate now so that one bad plugin cannot break check_pending for everyone.
            self.pm.check_pending()
        except Exception as exc:
            if self.pm.get_plugin(p.name) is not None:
                self.pm.unregister(name=p.name)
            if self.config.strict:
                raise PluginError(f"plugin {p.name!r} failed to load: {type(exc).__name__}: {exc}") from exc
            self._fail(p, f"{type(exc).__name__}: {exc}")
            return
        self.records[p.name] = self._record(p, "active")
        instrument(self, obj)

    def _fail(self, p: Declared, error: str) -> None:
        if self._select is None:  # the CLI's selection (for its commands) leaves it to the engine's
            log.warning("plugin %s failed and was skipped: %s", p.name, error)
        self.records[p.name] = self._record(p, "failed", " ".join(error.split()))

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

    def service_owner(self, service: str) -> tuple[str, str] | None:
        """``(plugin, status)`` of the plugin whose manifest declares ``service``."""
        owner = self.installed.declarer("SERVICES", service)
        record = self.records.get(owner) if owner else None
        return (record.name, record.status) if record else None


def feature_of(plugin_name: str) -> str:
    """A plugin's settings table: ``goclaw.memory`` → ``memory``, ``hello`` → ``hello``."""
    return plugin_name.removeprefix("goclaw.")


def builtin_plugins() -> dict[str, str]:
    """The built-in plugins, ``{name: module}`` (the ``goclaw`` distribution's entry points)."""
    return {n: p.target for n, p in sorted(discover().plugins.items()) if p.builtin}


def build_plugin_manager(
    config: PluginsConfig, extra_plugins: Iterable[tuple[str, object]] = ()
) -> GoclawPluginManager:
    """A fresh, loaded manager."""
    manager = GoclawPluginManager(config, extra_plugins)
    manager.load()
    return manager
