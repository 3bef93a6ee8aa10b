"""Hooks run through pluggy's own call loop, with per-plugin isolation kept."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pluggy import Result

from goclaw import hookimpl
from goclaw.contracts.hooks import PromptRequest, SlashResult
from goclaw.engine import Engine
from goclaw.errors import PluginError
from goclaw_prompt import hookspecs as prompt_hooks


@dataclass
class _Section:
    name: str
    order: float
    modes: frozenset[str] = frozenset({"full", "minimal"})

    def render(self, ctx: Any) -> str:
        return f"[{self.name}]"


class _NewStyleWrapper:
    """A standard pluggy wrapper: sees every section, drops Safety and adds its own."""

    seen: list[str]

    def __init__(self) -> None:
        self.seen = []

    @hookimpl(wrapper=True)
    def goclaw_prompt_sections(self) -> Generator[None, list[list[Any]], list[list[Any]]]:
        result = yield
        self.seen = sorted(s.name for group in result for s in group)
        kept = [[s for s in group if s.name != "safety"] for group in result]
        return [*kept, [_Section("wrapped", 0.1)]]


class _OldStyleWrapper:
    calls = 0

    @hookimpl(hookwrapper=True)
    def goclaw_prompt_sections(self) -> Generator[None, Result[Any], None]:
        outcome = yield
        type(self).calls += 1
        assert outcome.get_result()


def _build(engine: Engine, agent: str = "a", **kwargs: Any) -> Any:
    if agent not in {a.name for a in engine.agents.list()}:
        engine.agents.create(agent)
    return engine.prompt.build_for(agent, user="u1", **kwargs)


def test_new_style_wrapper_runs_and_can_change_the_result(workspace: Path) -> None:
    wrapper = _NewStyleWrapper()
    with Engine.open(workspace, extra_plugins=[("wrap", wrapper)]) as engine:
        assert engine.plugin_manager.records["wrap"].status == "active"
        result = _build(engine)
        names = [s["name"] for s in result.sections]
        assert names[0] == "wrapped" and "safety" not in names and "identity" in names
        assert "[wrapped]" in result.prompt
        assert "safety" in wrapper.seen and "identity" in wrapper.seen
        assert engine.plugin_manager.records["wrap"].status == "active"


def test_old_style_hookwrapper_runs(workspace: Path) -> None:
    _OldStyleWrapper.calls = 0
    with Engine.open(workspace, extra_plugins=[("old", _OldStyleWrapper())]) as engine:
        result = _build(engine)
        assert "safety" in [s["name"] for s in result.sections]
        assert _OldStyleWrapper.calls == 1
        assert engine.plugin_manager.records["old"].status == "active"


def test_hookcall_monitoring_sees_facade_calls(workspace: Path) -> None:
    calls: list[tuple[str, list[str]]] = []
    with Engine.open(workspace) as engine:
        pm = engine.plugin_manager.pm
        undo = pm.add_hookcall_monitoring(
            lambda name, impls, kwargs: calls.append((name, [i.plugin_name for i in impls])),
            lambda outcome, name, impls, kwargs: None,
        )
        try:
            _build(engine, session_key="agent:a:cron:nightly")
        finally:
            undo()
    hooks = {name for name, _ in calls}
    assert {"goclaw_resolve_prompt_mode", "goclaw_prompt_sections", "goclaw_virtual_context_files"} <= hooks
    sections = next(impls for name, impls in calls if name == "goclaw_prompt_sections")
    assert "goclaw.section.safety" in sections


def test_tracing_sees_facade_calls(workspace: Path) -> None:
    lines: list[str] = []
    with Engine.open(workspace) as engine:
        pm = engine.plugin_manager.pm
        pm.trace.root.setwriter(lines.append)
        undo = pm.enable_tracing()
        try:
            _build(engine)
        finally:
            undo()
    assert any("goclaw_prompt_sections" in line for line in lines)


class _RaisingBeforeYield:
    @hookimpl(wrapper=True)
    def goclaw_prompt_sections(self) -> Generator[None, Any, Any]:
        raise ValueError("wrapper setup broke")
        yield  # pragma: no cover


class _RaisingAfterYield:
    @hookimpl(wrapper=True)
    def goclaw_prompt_sections(self) -> Generator[None, Any, Any]:
        yield
        raise ValueError("wrapper teardown broke")


@pytest.mark.parametrize(
    ("plugin", "message"),
    [(_RaisingBeforeYield(), "wrapper setup broke"), (_RaisingAfterYield(), "wrapper teardown broke")],
)
def test_raising_third_party_wrapper_is_isolated(workspace: Path, plugin: object, message: str) -> None:
    with Engine.open(workspace, extra_plugins=[("badwrap", plugin)]) as engine:
        result = _build(engine)
        assert "safety" in [s["name"] for s in result.sections]
        record = engine.plugin_manager.records["badwrap"]
        assert record.status == "failed" and message in (record.error or "")


def test_raising_third_party_wrapper_is_fatal_when_strict(workspace: Path) -> None:
    with Engine.open(
        workspace, plugins={"strict": True}, extra_plugins=[("badwrap", _RaisingAfterYield())]
    ) as engine:
        engine.agents.create("a")
        with pytest.raises(PluginError, match="wrapper teardown broke"):
            engine.prompt.build_for("a", user="u1")


class _RaisingModeResolver:
    @hookimpl
    def goclaw_resolve_prompt_mode(self, request: PromptRequest) -> str:
        raise RuntimeError("resolver broke")


def test_raising_mode_resolver_is_isolated(workspace: Path) -> None:
    with Engine.open(workspace, extra_plugins=[("resolver", _RaisingModeResolver())]) as engine:
        assert _build(engine, session_key="agent:a:cron:x").mode == "minimal"
        assert _build(engine).mode == "full"
        record = engine.plugin_manager.records["resolver"]
        assert record.status == "failed" and "resolver broke" in (record.error or "")


@dataclass
class _BrokenSlash:
    name: str = "broken-slash"
    order: float = -1.0

    def handle(self, text: str, ctx: Any) -> SlashResult | None:
        raise RuntimeError("slash broke")


class _SlashPlugin:
    @hookimpl
    def goclaw_slash_commands(self) -> list[Any]:
        return [_BrokenSlash()]


def test_raising_slash_command_is_isolated(workspace: Path) -> None:
    with Engine.open(workspace, extra_plugins=[("slashy", _SlashPlugin())]) as engine:
        result = _build(engine, message="/list-skills")
        assert result.slash is not None  # the built-in command still handled it
        record = engine.plugin_manager.records["slashy"]
        assert record.status == "failed" and "slash broke" in (record.error or "")


def test_raising_slash_command_is_fatal_when_strict(workspace: Path) -> None:
    with Engine.open(
        workspace, plugins={"strict": True}, extra_plugins=[("slashy", _SlashPlugin())]
    ) as engine:
        engine.agents.create("a")
        with pytest.raises(PluginError, match="slash broke"):
            engine.prompt.build_for("a", user="u1", message="/list-skills")


class _RaisingImpl:
    @hookimpl
    def goclaw_prompt_sections(self) -> list[Any]:
        raise ValueError("impl broke")


def test_raising_impl_is_isolated_beside_a_wrapper(workspace: Path) -> None:
    wrapper = _NewStyleWrapper()
    with Engine.open(workspace, extra_plugins=[("raiser", _RaisingImpl()), ("wrap", wrapper)]) as engine:
        result = _build(engine)
        assert "wrapped" in [s["name"] for s in result.sections]
        assert engine.plugin_manager.records["raiser"].status == "failed"
        assert engine.plugin_manager.records["wrap"].status == "active"


class _DuplicateViaWrapper:
    @hookimpl(wrapper=True)
    def goclaw_prompt_sections(self) -> Generator[None, list[list[Any]], list[list[Any]]]:
        result = yield
        return [*result, [_Section("safety", 9.0)]]


def test_duplicate_added_by_a_wrapper_names_the_wrapper(workspace: Path) -> None:
    with (
        Engine.open(workspace, extra_plugins=[("dupwrap", _DuplicateViaWrapper())]) as engine,
        pytest.raises(PluginError, match=r"'goclaw\.section\.safety' and 'dupwrap'"),
    ):
        prompt_hooks.sections(engine)


class _DocsWrapper:
    """The docs' example: rebuilds every plugin's list, keeping the sections themselves."""

    @hookimpl(wrapper=True)
    def goclaw_prompt_sections(self) -> Generator[None, list[list[Any]], list[list[Any]]]:
        result = yield
        return [[s for s in group if s.name != "sandbox"] for group in result]


@dataclass
class _FailingSection(_Section):
    def render(self, ctx: Any) -> str:
        raise RuntimeError(f"{self.name} broke")


class _FailingSectionPlugin:
    @hookimpl
    def goclaw_prompt_sections(self) -> list[Any]:
        return [_FailingSection("flaky", 50.0)]


class _ClashingSectionPlugin:
    @hookimpl
    def goclaw_prompt_sections(self) -> list[Any]:
        return [_Section("safety", 9.0)]


def test_a_wrapper_rebuilding_the_lists_leaves_each_section_its_owner(workspace: Path) -> None:
    with Engine.open(workspace, extra_plugins=[("wrap", _DocsWrapper())]) as engine:
        prompt_hooks.sections(engine)
        assert engine.hooks.owner("prompt section", "safety") == "goclaw.section.safety"
        assert engine.hooks.owner("prompt section", "identity") == "goclaw.section.identity"


def test_a_wrapper_rebuilding_the_lists_names_both_plugins_of_a_clash(workspace: Path) -> None:
    plugins = [("clash", _ClashingSectionPlugin()), ("wrap", _DocsWrapper())]
    with (
        Engine.open(workspace, extra_plugins=plugins) as engine,
        pytest.raises(PluginError, match=r"both 'clash' and 'goclaw\.section\.safety'"),
    ):
        prompt_hooks.sections(engine)


def test_another_plugins_failure_beside_a_wrapper_marks_that_plugin(workspace: Path) -> None:
    plugins = [("flaky", _FailingSectionPlugin()), ("wrap", _DocsWrapper())]
    with Engine.open(workspace, extra_plugins=plugins) as engine:
        result = _build(engine)
        assert "flaky" not in [s["name"] for s in result.sections]
        assert engine.plugin_manager.records["flaky"].status == "failed"
        assert engine.plugin_manager.records["wrap"].status == "active"


def test_a_failing_builtin_section_beside_a_wrapper_is_raised(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Engine.open(workspace, extra_plugins=[("wrap", _DocsWrapper())]) as engine:
        safety = next(s for s in prompt_hooks.sections(engine) if s.name == "safety")
        monkeypatch.setattr(safety, "renderer", lambda ctx: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            _build(engine)
        assert engine.plugin_manager.records["wrap"].status == "active"
