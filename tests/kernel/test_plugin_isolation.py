"""Disabling a plugin changes nothing outside its feature.

For every non-essential default plugin: build a prompt under a truncation budget, search memory,
end a session and run the workers once, with and without the plugin. Outside the plugin's own
package, no prompt section may disappear, the AGENTS.md truncation may not change,
``run.completed`` is still published, no worker delivery fails, and the memory search still
finds the same top hit. The only effects allowed are listed in ``EXPECTED`` with the reason.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from goclaw.engine import Engine
from goclaw.events.runner import WorkerRunner
from goclaw.plugins import builtin_plugins, discover
from goclaw.store.models import Event

BUILTINS = builtin_plugins()
NON_ESSENTIAL = sorted(set(BUILTINS) - discover().essential)
SETTINGS: dict[str, Any] = {"prompt": {"max_chars_per_file": 1000, "total_max_chars": 6000}}
# Effects a plugin has outside its own package, on purpose.
EXPECTED: dict[str, dict[str, Any]] = {
    # No seeding means no BOOTSTRAP.md, so the first-run section (goclaw_prompt) has nothing to say
    # and the seeded files are absent; AGENTS.md (set explicitly) is unchanged.
    "goclaw.bootstrap": {"sections": {"bootstrap"}},
    # Sessions are the memory plugin's: without it there is no session to end.
    "goclaw.memory": {"events": False, "search": False},
    # Full-text only without an embedder: the top hit must still be the same.
}


def _package(plugin: str) -> str:
    return BUILTINS[plugin].split(".")[0]


def _observe(workspace: Path, disable: list[str]) -> dict[str, Any]:
    with Engine.open(workspace, plugins={"disable": disable, **SETTINGS}) as engine:
        agent = engine.agents.create("ada")
        engine.files.set("ada", "AGENTS.md", "a" * 2500 + "z" * 2500)
        build = engine.prompt.build_for("ada", user="u1")
        sections = {s["name"]: engine.hooks.owner("prompt section", s["name"]) for s in build.sections}
        [agents_md] = [(f["chars"], f["truncated"]) for f in build.files if f["name"] == "AGENTS.md"]
        top = None
        events = 0
        failures = 0
        if engine.has_service("memory"):
            folder = engine.agent_dir(agent) / "memory"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "notes.md").write_text("# Notes\n\nThe invoice code is TCK-4471 for Globex.\n")
            (folder / "other.md").write_text("# Other\n\nLunch was pasta on Tuesday.\n")
            engine.memory.index("ada")
            hits = engine.memory.search("invoice code TCK-4471", "ada")
            top = hits[0].path if hits else None
        if engine.has_service("sessions"):
            engine.sessions.append("ada", "k", "user", "hello")
            engine.sessions.end("k")
            with engine.db.session() as s:
                events = len(list(s.exec(select(Event).where(Event.event_type == "run.completed"))))
            # Every worker still active copes with its neighbours disabled (the semantic worker,
            # for one, reads summaries through the episodic service).
            report = WorkerRunner(engine).run_once()
            failures = report.failed + report.dead
    return {"sections": sections, "agents_md": agents_md, "top": top, "events": events, "failures": failures}


@cache
def _baseline(root: str) -> dict[str, Any]:
    return _observe(Path(root) / "baseline", [])


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _baseline(str(tmp_path_factory.mktemp("isolation")))


def test_baseline_exercises_every_check(baseline: dict[str, Any]) -> None:
    assert baseline["agents_md"][1] is True and baseline["agents_md"][0] <= 1000
    assert baseline["top"] == "memory/notes.md"
    assert baseline["events"] == 1
    assert baseline["failures"] == 0
    assert {"skills", "memory_recall", "safety"} <= set(baseline["sections"])


@pytest.mark.parametrize("plugin", NON_ESSENTIAL)
def test_disabling_changes_nothing_outside_the_feature(
    plugin: str, baseline: dict[str, Any], tmp_path: Path
) -> None:
    seen = _observe(tmp_path, [plugin])
    allowed = EXPECTED.get(plugin, {})
    own = _package(plugin)
    lost = {
        name
        for name, owner in baseline["sections"].items()
        if name not in seen["sections"] and (owner is None or _package(owner) != own)
    }
    assert lost == allowed.get("sections", set()), f"sections lost outside {own}: {lost}"
    assert seen["agents_md"] == baseline["agents_md"], "the truncation budget changed"
    if allowed.get("events", True):
        assert seen["events"] == 1, "run.completed was not published"
    assert seen["failures"] == 0, "a worker failed with this plugin disabled"
    if allowed.get("search", True):
        assert seen["top"] == baseline["top"], "memory search changed"


# --------------------------------------------------------------------------- replacing a built-in


@pytest.fixture(scope="module")
def roster_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.plugin_install import pip_install_target

    return pip_install_target("goclaw-roster", tmp_path_factory.mktemp("roster-site"))


def test_replacement_delegation_file_through_the_cli(roster_site: Path, workspace: Path) -> None:
    """A DELEGATION.md written from scratch, installed by entry point, replaces the built-in."""
    import json

    from tests.helpers import run_cli
    from tests.plugin_install import on_sys_path

    (workspace / "goclaw.toml").write_text('[plugins]\ndisable = ["goclaw.virtual.delegation"]\n')
    with on_sys_path(roster_site):
        for args in (["agent", "create", "lead"], ["agent", "create", "coder"]):
            assert run_cli(args, workspace=workspace).code == 0
        with Engine.open(workspace) as engine:
            engine.agents.link("lead", "coder", "code reviews")
        result = run_cli(["prompt", "--agent", "lead", "--json"], workspace=workspace)
        assert result.code == 0, result.err
        plugins = json.loads(run_cli(["plugins", "--all", "--json"], workspace=workspace).out)
    data = json.loads(result.out)
    [delegation] = [f for f in data["files"] if f["name"] == "DELEGATION.md"]
    assert delegation["virtual"] is True
    assert "| coder | code reviews |" in data["prompt"]
    assert "# Who to ask" in data["prompt"] and "Delegation Targets" not in data["prompt"]
    status = {p["name"]: p["status"] for p in plugins}
    assert status["roster"] == "active" and status["goclaw.virtual.delegation"] == "blocked"
