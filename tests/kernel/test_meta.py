"""Meta-tests that keep the plugin contract honest (a habit borrowed from datasette).

* every hook is documented in the hook reference, with an example;
* every hook is reachable through the kernel's facade (a spy plugin implementing all of
  them sees each one called);
* every non-essential default plugin can be disabled, and a test plugin can take its place;
* the generated reference pages match the code.
"""

from __future__ import annotations

import functools
import importlib
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from goclaw import hookimpl
from goclaw.contracts.commands import CommandSpec
from goclaw.contracts.hooks import ContextFile, PromptMode, PromptRequest, SearchHit
from goclaw.contracts.host import PromptContext
from goclaw.contracts.schema import ForgetScope
from goclaw.engine import Engine
from goclaw.hookspecs import HOOK_NAMES
from goclaw.plugins import builtin_plugins, discover
from goclaw_http import hookspecs as http_hooks
from goclaw_mcp import hookspecs as mcp_hooks
from goclaw_memory import hookspecs as memory_hooks
from goclaw_prompt import hookspecs as prompt_hooks
from goclaw_skills import hookspecs as skill_hooks

ROOT = Path(__file__).resolve().parents[2]
HOOKS_DOC = ROOT / "docs" / "reference" / "hooks.md"


# The kernel's hooks, then each built-in plugin's own (the module its manifest names).
PLUGIN_SPECS = sorted({p.declares("HOOKSPECS", None) for p in discover().plugins.values()} - {None})
SPECS = [("goclaw.hookspecs", h) for h in HOOK_NAMES]
SPECS += [(m, h) for m in PLUGIN_SPECS for h in importlib.import_module(m).HOOK_NAMES]
ALL_HOOKS = {h for _module, h in SPECS}


@pytest.mark.parametrize(("module", "hook"), SPECS)
def test_every_hook_is_documented_with_an_example(module: str, hook: str) -> None:
    text = HOOKS_DOC.read_text(encoding="utf-8")
    match = re.search(rf"^### {hook}\n(.*?)(?=^### |\Z)", text, re.S | re.M)
    assert match, f"{hook} has no section in {HOOKS_DOC.name}"
    body = match.group(1)
    assert f"::: {module}.{hook}" in body, "the section must render the hookspec docstring"
    assert "```python" in body and f"def {hook}(" in body, "the section needs a runnable example"


@pytest.mark.parametrize("module", ["goclaw.hookspecs", *PLUGIN_SPECS])
def test_hook_names_list_every_hookspec_of_the_module(module: str) -> None:
    mod = importlib.import_module(module)
    specs = {n for n in dir(mod) if n.startswith("goclaw_") and hasattr(getattr(mod, n), "goclaw_spec")}
    assert specs == set(mod.HOOK_NAMES)


def test_every_hookspec_has_a_docstring() -> None:
    for module, hook in SPECS:
        doc = getattr(importlib.import_module(module), hook).__doc__ or ""
        assert "Default plugin" in doc, f"{hook} must say which default plugin implements it"
        assert "Semantics" in doc or "firstresult" in doc or "Default plugin" in doc


class Spy:
    """Implements every hook; records which ones the kernel called."""

    def __init__(self) -> None:
        self.called: set[str] = set()

    def _hit(self, name: str) -> None:
        self.called.add(name)

    @hookimpl
    def goclaw_add_hookspecs(self, plugin_manager: Any) -> None:
        self._hit("goclaw_add_hookspecs")

    @hookimpl
    def goclaw_http_routes(self, engine: Any, auth: Any) -> Any:
        self._hit("goclaw_http_routes")
        return "router"

    @hookimpl
    def goclaw_settings_model(self) -> Any:
        self._hit("goclaw_settings_model")
        return None

    @hookimpl
    def goclaw_services(self, engine: Any) -> dict[str, Any]:
        self._hit("goclaw_services")
        return {"spy": self}

    @hookimpl
    def goclaw_startup(self, engine: Any) -> None:
        self._hit("goclaw_startup")

    @hookimpl
    def goclaw_agent_created(self, engine: Any, agent: Any) -> None:
        self._hit("goclaw_agent_created")

    @hookimpl
    def goclaw_register_commands(self, cli: Any) -> None:
        self._hit("goclaw_register_commands")

    @hookimpl
    def goclaw_schema(self) -> list[Any]:
        self._hit("goclaw_schema")
        return []

    @hookimpl
    def goclaw_forget_rows(self, engine: Any, scope: Any, connection: Any) -> list[Any]:
        self._hit("goclaw_forget_rows")
        return []

    @hookimpl
    def goclaw_forgotten(self, engine: Any, scope: Any) -> None:
        self._hit("goclaw_forgotten")

    @hookimpl
    def goclaw_cli_commands(self) -> list[Any]:
        self._hit("goclaw_cli_commands")
        return [CommandSpec("spy", "Spy.", "spy_module:spy")]

    @hookimpl
    def goclaw_prompt_sections(self) -> list[Any]:
        self._hit("goclaw_prompt_sections")
        return []

    @hookimpl
    def goclaw_prompt_modes(self) -> list[PromptMode]:
        self._hit("goclaw_prompt_modes")
        return [PromptMode("spy-mode")]

    @hookimpl(tryfirst=True)
    def goclaw_resolve_prompt_mode(self, request: PromptRequest) -> str | None:
        self._hit("goclaw_resolve_prompt_mode")
        return "spy-mode" if request.channel == "spy" else None

    @hookimpl
    def goclaw_context_file_sources(self) -> list[Any]:
        self._hit("goclaw_context_file_sources")
        return []

    @hookimpl
    def goclaw_virtual_context_files(self, ctx: Any) -> list[ContextFile]:
        self._hit("goclaw_virtual_context_files")
        return [ContextFile("SPY.md", "watching", source="virtual", virtual=True)]

    @hookimpl
    def goclaw_slash_commands(self) -> list[Any]:
        self._hit("goclaw_slash_commands")
        return []

    @hookimpl
    def goclaw_skill_tiers(self) -> list[Any]:
        self._hit("goclaw_skill_tiers")
        return []

    @hookimpl
    def goclaw_search_backends(self) -> dict[str, Any]:
        self._hit("goclaw_search_backends")
        return {"spy-backend": lambda engine: "backend"}

    @hookimpl
    def goclaw_embedding_providers(self) -> dict[str, Any]:
        self._hit("goclaw_embedding_providers")
        return {"spy-embedder": lambda engine: "embedder"}

    @hookimpl
    def goclaw_tokenizers(self) -> dict[str, Any]:
        self._hit("goclaw_tokenizers")
        return {"spy-tokenizer": lambda engine: "tokenizer"}

    @hookimpl
    def goclaw_llm_providers(self) -> dict[str, Any]:
        self._hit("goclaw_llm_providers")
        return {"spy-llm": lambda engine: "llm"}

    @hookimpl
    def goclaw_memory_search_extra(
        self, engine: Any, query: str, agent: Any, user: str | None, limit: int
    ) -> list[SearchHit]:
        self._hit("goclaw_memory_search_extra")
        return [SearchHit(id="spy", score=1.0, text=query, tier="spy")]

    @hookimpl
    def goclaw_memory_expand(self, engine: Any, id: str, agent: Any, user: Any) -> Any:
        self._hit("goclaw_memory_expand")
        return {"id": id}

    @hookimpl
    def goclaw_memory_rerank(self, engine: Any, query: str, agent: Any, user: Any, hits: list[Any]) -> Any:
        self._hit("goclaw_memory_rerank")
        return list(reversed(hits))

    @hookimpl
    def goclaw_mcp_prompts(self, engine: Any) -> list[Any]:
        self._hit("goclaw_mcp_prompts")
        return []

    @hookimpl
    def goclaw_consolidation_workers(self) -> list[Any]:
        self._hit("goclaw_consolidation_workers")
        return []

    @hookimpl
    def goclaw_tools(self, engine: Any) -> list[Any]:
        self._hit("goclaw_tools")
        return []


def test_every_hook_is_reachable_through_the_facade(workspace: Path) -> None:
    import click

    spy = Spy()
    with Engine.open(workspace, extra_plugins=[("spy", spy)]) as engine:
        assert engine.service("spy") is spy
        agent = engine.agents.create("watched")
        hooks = engine.hooks
        ctx = PromptContext(
            engine=engine, request=PromptRequest(agent="watched"), agent=agent, user="u", mode="full"
        )
        hooks.register_commands(click.Group("x"))
        assert ("spy", "router") in http_hooks.routes(engine, auth=lambda: None)
        hooks.schema_components()
        with engine.db.engine.connect() as conn:
            hooks.forget_rows(engine, ForgetScope((agent.id,), "u"), conn)
        hooks.forgotten(engine, ForgetScope((agent.id,), "u"))
        assert hooks.cli_commands() == [("spy", CommandSpec("spy", "Spy.", "spy_module:spy"))]
        # The plugins' own hooks, through the generic facade calls their code makes.
        prompt_hooks.sections(engine)
        assert "spy-mode" in prompt_hooks.modes(engine)
        assert prompt_hooks.resolve_mode(engine, PromptRequest(agent="watched", channel="spy")) == "spy-mode"
        prompt_hooks.context_file_sources(engine)
        assert [f.name for f in prompt_hooks.virtual_context_files(engine, ctx) if f.name == "SPY.md"] == [
            "SPY.md"
        ]
        prompt_hooks.slash_commands(engine)
        skill_hooks.tiers(engine)
        assert memory_hooks.search_backends(engine)["spy-backend"](engine) == "backend"
        assert engine.embedder("spy-embedder") == "embedder"
        assert engine.llm("spy-llm") == "llm"
        assert hooks.tokenizers()["spy-tokenizer"](engine) == "tokenizer"
        extra = hooks.call(
            "goclaw_memory_search_extra",
            engine=engine,
            query="q",
            agent=agent,
            user=None,
            limit=5,
            query_vector=None,
            for_prompt=False,
            since=None,
            until=None,
        )
        assert ("spy", [SearchHit(id="spy", score=1.0, text="q", tier="spy")]) in extra
        rerank = {"engine": engine, "query": "q", "agent": agent, "user": None, "query_vector": None}
        assert hooks.first("goclaw_memory_rerank", hits=[1, 2], **rerank) == [2, 1]
        expand = {"engine": engine, "agent": agent, "user": None}
        assert hooks.first("goclaw_memory_expand", id="spy:1", **expand) == {"id": "spy:1"}
        hooks.consolidation_workers()
        hooks.tools(engine)
        mcp_hooks.prompts(engine)
    assert spy.called == ALL_HOOKS


BUILTINS = builtin_plugins()
NON_ESSENTIAL = sorted(set(BUILTINS) - discover().essential)


@pytest.mark.parametrize("name", NON_ESSENTIAL)
def test_default_plugin_can_be_disabled(name: str, workspace: Path) -> None:
    with Engine.open(workspace, plugins={"disable": [name]}) as engine:
        assert engine.plugin_manager.records[name].status == "blocked"
        assert engine.plugin_manager.pm.get_plugin(name) is None
        engine.agents.create("still-here")
        assert [a.name for a in engine.agents.list()] == ["still-here"]


def _replacement_for(module_name: str) -> tuple[Any, list[str]]:
    """A different plugin object that provides the same hook implementations."""
    module = importlib.import_module(module_name)
    calls: list[str] = []
    attrs: dict[str, Any] = {}
    for attr in dir(module):
        fn = getattr(module, attr)
        if attr.startswith("goclaw_") and callable(fn) and hasattr(fn, "goclaw_impl"):
            opts = dict(fn.goclaw_impl)

            def make(f: Any, hook: str) -> Any:
                @functools.wraps(f)  # pluggy reads the argument names through __wrapped__
                def impl(*args: Any, **kwargs: Any) -> Any:  # pluggy passes arguments by position
                    calls.append(hook)
                    return f(*args, **kwargs)

                return impl

            wrapped = make(fn, attr)
            attrs[attr] = staticmethod(
                hookimpl(
                    wrapped,
                    tryfirst=opts.get("tryfirst", False),
                    trylast=opts.get("trylast", False),
                    optionalhook=opts.get("optionalhook", False),
                )
            )
    return type("Replacement", (), attrs)(), calls


@pytest.mark.parametrize("name", NON_ESSENTIAL)
def test_default_plugin_can_be_replaced(name: str, workspace: Path) -> None:
    replacement, calls = _replacement_for(BUILTINS[name])
    # Registered under the built-in's feature name, so it owns the same [plugins.<feature>] table.
    new_name = name.removeprefix("goclaw.")
    with Engine.open(
        workspace, plugins={"disable": [name]}, extra_plugins=[(new_name, replacement)]
    ) as engine:
        record = engine.plugin_manager.records[new_name]
        assert record.status == "active", record.error
        hooks_of_builtin = {
            h for h in dir(importlib.import_module(BUILTINS[name])) if h.startswith("goclaw_")
        }
        registered = set(record.hooks)
        assert registered == {h for h in hooks_of_builtin if h in ALL_HOOKS}
        engine.agents.create("replaced")
    if {"goclaw_settings_model", "goclaw_services", "goclaw_startup", "goclaw_agent_created"} & registered:
        assert calls, "the replacement's hooks were never called"


def test_generated_reference_pages_are_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_docs.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
