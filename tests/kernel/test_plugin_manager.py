"""The plugin manager: built-ins, entry points, disable/only/strict, failures."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from goclaw import hookimpl
from goclaw.config import PluginsConfig
from goclaw.engine import Engine
from goclaw.errors import PluginError
from goclaw.plugins import build_plugin_manager, builtin_plugins, discover
from goclaw_prompt import hookspecs as prompt_hooks
from tests.helpers import run_cli
from tests.plugin_install import on_sys_path, pip_install_target

BUILTINS = builtin_plugins()
ESSENTIAL = discover().essential


@pytest.fixture(scope="session")
def hello_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pip_install_target("goclaw-hello", tmp_path_factory.mktemp("hello-site"))


@pytest.fixture(scope="session")
def broken_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pip_install_target("goclaw-broken", tmp_path_factory.mktemp("broken-site"))


@pytest.fixture
def hello_installed(hello_site: Path) -> Iterator[Path]:
    with on_sys_path(hello_site):
        yield hello_site


@pytest.fixture
def broken_installed(broken_site: Path) -> Iterator[Path]:
    with on_sys_path(broken_site):
        yield broken_site


def test_every_builtin_is_active_by_default() -> None:
    manager = build_plugin_manager(PluginsConfig())
    for name in BUILTINS:
        assert manager.records[name].status == "active", name
        assert manager.records[name].builtin
        assert manager.pm.get_plugin(name) is not None


def test_disable_blocks_before_import() -> None:
    victim = next(n for n in sorted(BUILTINS) if n not in ESSENTIAL)
    manager = build_plugin_manager(PluginsConfig(disable=[victim]))
    assert manager.records[victim].status == "blocked"
    assert manager.pm.get_plugin(victim) is None


def test_unknown_name_lists_known_plugins() -> None:
    with pytest.raises(PluginError) as err:
        build_plugin_manager(PluginsConfig(disable=["goclaw.skils"]))
    message = str(err.value)
    assert "goclaw.skils" in message
    for name in BUILTINS:
        assert name in message
    assert "\n" not in message


def test_unknown_name_in_only_is_an_error() -> None:
    with pytest.raises(PluginError, match=r"plugins\.only"):
        build_plugin_manager(PluginsConfig(only=["nope"]))


@pytest.mark.parametrize("name", sorted(ESSENTIAL))
def test_essential_plugin_cannot_be_disabled(name: str) -> None:
    with pytest.raises(PluginError, match="essential"):
        build_plugin_manager(PluginsConfig(disable=[name]))


def test_only_keeps_listed_and_essential() -> None:
    keep = "goclaw.llm"
    manager = build_plugin_manager(PluginsConfig(only=[keep]))
    active = set(manager.active_names())
    assert active == {keep, *ESSENTIAL}


def test_entry_point_plugin_loads_and_contributes(hello_installed: Path, workspace: Path) -> None:
    manager = build_plugin_manager(PluginsConfig())
    record = manager.records["hello"]
    assert record.status == "active"
    assert record.distribution == "goclaw-hello"
    assert record.version == "0.3.0"
    assert "goclaw_prompt_sections" in record.hooks
    with Engine.open(workspace, plugins={"hello": {"greeting": "Ahoy"}}) as engine:
        assert engine.plugin_settings("hello").greeting == "Ahoy"
        assert "hello" in [s.name for s in prompt_hooks.sections(engine)]
        assert engine.embedder("hello").dim == 26


def test_entry_point_plugin_can_be_disabled(hello_installed: Path) -> None:
    manager = build_plugin_manager(PluginsConfig(disable=["hello"]))
    assert manager.records["hello"].status == "blocked"
    assert manager.pm.get_plugin("hello") is None


def test_autoload_env_blocks_entry_points(hello_installed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOCLAW_DISABLE_PLUGIN_AUTOLOAD", "1")
    manager = build_plugin_manager(PluginsConfig())
    assert manager.records["hello"].status == "blocked"
    assert all(manager.records[n].status == "active" for n in BUILTINS)


def test_broken_plugin_is_failed_and_everything_else_works(broken_installed: Path, workspace: Path) -> None:
    manager = build_plugin_manager(PluginsConfig())
    assert manager.records["broken"].status == "failed"
    assert "broken on purpose" in (manager.records["broken"].error or "")
    with Engine.open(workspace) as engine:
        agent = engine.agents.create("still-works")
        assert engine.agents.get("still-works").id == agent.id


def test_broken_plugin_is_fatal_when_strict(broken_installed: Path) -> None:
    with pytest.raises(PluginError, match="broken"):
        build_plugin_manager(PluginsConfig(strict=True))


def test_plugins_cli_shows_entry_point_and_failures(
    hello_installed: Path, broken_installed: Path, workspace: Path
) -> None:
    result = run_cli(["plugins", "--all", "--json"], workspace=workspace)
    assert result.code == 0, result.err
    rows = {r["name"]: r for r in json.loads(result.out)}
    assert rows["hello"]["status"] == "active"
    assert rows["hello"]["distribution"] == "goclaw-hello"
    assert rows["broken"]["status"] == "failed"
    for name in BUILTINS:
        assert rows[name]["status"] == "active"
    # Without --all only third-party plugins are listed.
    result = run_cli(["plugins", "--json"], workspace=workspace)
    assert {r["name"] for r in json.loads(result.out)} == {"hello", "broken"}


def test_plugin_cli_command_is_registered(hello_installed: Path, workspace: Path) -> None:
    result = run_cli(["hello", "tests"], workspace=workspace)
    assert result.code == 0, result.err
    assert result.out.strip() == "hello, tests"


def test_disable_in_config_file_shows_blocked(workspace: Path) -> None:
    (workspace / "goclaw.toml").write_text('[plugins]\ndisable = ["goclaw.llm"]\n')
    result = run_cli(["plugins", "--all", "--json"], workspace=workspace)
    rows = {r["name"]: r for r in json.loads(result.out)}
    assert rows["goclaw.llm"]["status"] == "blocked"


def test_typo_in_config_exits_nonzero_naming_known_plugins(workspace: Path) -> None:
    (workspace / "goclaw.toml").write_text('[plugins]\ndisable = ["goclaw.lm"]\n')
    result = run_cli(["agent", "list"], workspace=workspace)
    assert result.code != 0
    assert result.err.startswith("error: unknown plugin name")
    assert "goclaw.llm" in result.err
    assert result.err.count("\n") == 1
    assert "Traceback" not in result.err


# --------------------------------------------------------------------------- hook facade


@dataclass
class _Section:
    name: str
    order: float
    modes: frozenset[str] = frozenset({"full"})

    def render(self, ctx: Any) -> str:
        return self.name


class _TwoSections:
    @hookimpl
    def goclaw_prompt_sections(self) -> list[Any]:
        return [_Section("zeta", 1.0), _Section("alpha", 1.0), _Section("first", 0.5)]


class _ClashingBackend:
    @hookimpl
    def goclaw_llm_providers(self) -> dict[str, Any]:
        return {"litellm": lambda engine: None}


class _RaisingPlugin:
    @hookimpl
    def goclaw_prompt_sections(self) -> list[Any]:
        raise ValueError("boom")


def _sections(hooks: Any) -> list[Any]:
    """The prompt plugin's call of its sections hook, on a bare hook facade."""
    return prompt_hooks.sections(SimpleNamespace(hooks=hooks))


def _manager(*extra: tuple[str, object], strict: bool = False) -> Any:
    from goclaw.hooks import Hooks

    return Hooks(build_plugin_manager(PluginsConfig(strict=strict), extra))


def test_sections_sorted_by_order_then_name_not_registration() -> None:
    hooks = _manager(("two", _TwoSections()))
    names = [s.name for s in _sections(hooks) if s.name in {"zeta", "alpha", "first"}]
    assert names == ["first", "alpha", "zeta"]


def test_registry_duplicate_names_both_plugins() -> None:
    hooks = _manager(("clash", _ClashingBackend()))
    with pytest.raises(PluginError) as err:
        hooks.llm_providers()
    assert "goclaw.llm" in str(err.value) and "clash" in str(err.value)


def test_raising_third_party_hook_is_skipped_and_reported() -> None:
    hooks = _manager(("raiser", _RaisingPlugin()))
    sections = _sections(hooks)
    assert all(s.name != "boom" for s in sections)
    assert hooks.manager.records["raiser"].status == "failed"
    assert "boom" in hooks.manager.records["raiser"].error


def test_raising_third_party_hook_is_fatal_when_strict() -> None:
    hooks = _manager(("raiser", _RaisingPlugin()), strict=True)
    with pytest.raises(PluginError, match="raiser"):
        _sections(hooks)


def test_misspelled_hook_fails_at_startup() -> None:
    class Typo:
        @hookimpl
        def goclaw_prompt_sectoins(self) -> list[Any]:
            return []

    with pytest.raises(PluginError, match="typo"):
        build_plugin_manager(PluginsConfig(strict=True), [("typo", Typo())])
    manager = build_plugin_manager(PluginsConfig(), [("typo", Typo())])
    assert manager.records["typo"].status == "failed"


def test_a_plugins_own_hook_exists_while_that_plugin_is_disabled() -> None:
    """The skills plugin's hook comes from its manifest (HOOKSPECS): a plugin implementing it
    (no optionalhook) loads with goclaw.skills disabled, and nobody calls it."""

    class Tier:
        @hookimpl
        def goclaw_skill_tiers(self) -> list[Any]:
            raise AssertionError("called while goclaw.skills is off")

    manager = build_plugin_manager(PluginsConfig(disable=["goclaw.skills"], strict=True), [("tier", Tier())])
    assert manager.records["tier"].status == "active"
    assert manager.records["goclaw.skills.tier.project"].status == "active"
    assert manager.pm.hook.goclaw_skill_tiers.spec is not None


class _BadRender:
    @hookimpl
    def goclaw_prompt_sections(self) -> list[Any]:
        @dataclass
        class Exploding:
            name: str = "exploding"
            order: float = 2.5
            modes: frozenset[str] = frozenset({"full"})

            def render(self, ctx: Any) -> str:
                raise RuntimeError("render failed")

        return [Exploding()]


def test_third_party_section_render_failure_is_skipped(workspace: Path) -> None:
    with Engine.open(workspace, extra_plugins=[("bad-render", _BadRender())]) as engine:
        engine.agents.create("robust")
        result = engine.prompt.build_for("robust", user="u1")
        assert "exploding" not in [s["name"] for s in result.sections]
        assert "safety" in [s["name"] for s in result.sections]
        record = engine.plugin_manager.records["bad-render"]
        assert record.status == "failed" and "render failed" in (record.error or "")


def test_third_party_section_render_failure_is_fatal_when_strict(workspace: Path) -> None:
    with Engine.open(
        workspace, plugins={"strict": True}, extra_plugins=[("bad-render", _BadRender())]
    ) as engine:
        engine.agents.create("strict")
        with pytest.raises(PluginError, match="render failed"):
            engine.prompt.build_for("strict", user="u1")


def test_a_failed_plugin_is_reported_once_per_command(
    broken_installed: Path, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The CLI loads the plugins whose commands no manifest declares (to list their commands),
    then the engine loads every plugin: a plugin that fails is still one warning."""
    caplog.set_level("WARNING", logger="goclaw.plugins")
    result = run_cli(["agent", "create", "once"], workspace=workspace)
    assert result.code == 0, result.err
    failed = [r.getMessage() for r in caplog.records if "broken failed and was skipped" in r.getMessage()]
    assert len(failed) == 1, failed
