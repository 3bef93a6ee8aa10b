"""Loader cache and hot reload with real files and a real watchdog observer."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from goclaw.contracts.hooks import PromptRequest
from goclaw.contracts.host import PromptContext
from goclaw_prompt import hookspecs as prompt_hooks
from tests.skills_helpers import no_builtin, write_skill


def _render(eng: Any) -> tuple[str | None, PromptContext]:
    ctx = PromptContext(
        engine=eng, request=PromptRequest(agent="bot"), agent=eng.agents.get("bot"), user="", mode="full"
    )
    [section] = [s for s in prompt_hooks.sections(eng) if s.name == "skills"]
    return section.render(ctx), ctx


def _eventually(check: Callable[[], bool], timeout: float = 1.0) -> float:
    """Poll ``check()`` (as a runtime building prompts would) until it holds, at most ``timeout`` s."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():
            return time.monotonic() - start
        time.sleep(0.05)
    raise AssertionError("the change was not picked up")


def test_loader_caches_between_bumps(make_engine, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    write_skill(workspace / "skills", "one", "first")
    eng = make_engine(plugins=no_builtin(skills={"watch": False}, embeddings={"provider": "none"}))
    eng.agents.create("bot")
    _render(eng)
    scans = eng.skills.loader.scans
    assert scans == 1
    for _ in range(5):
        _render(eng)
        eng.skills.search("first")
        eng.skills.list("bot")
    assert eng.skills.loader.scans == scans  # no disk rescan per build
    write_skill(workspace / "skills", "two", "second")
    assert "two" not in (_render(eng)[0] or "")  # not watched: the cache stands
    eng.skills.reload()
    assert "<slug>two</slug>" in (_render(eng)[0] or "")
    assert eng.skills.loader.scans == scans + 1


def test_hot_reload_edit_add_remove(make_engine, workspace: Path, home: Path) -> None:  # type: ignore[no-untyped-def]
    root = workspace / "skills"
    write_skill(root, "alpha", "original alpha description")
    eng = make_engine(plugins=no_builtin(embeddings={"provider": "none"}))
    eng.agents.create("bot")
    text, ctx = _render(eng)  # the first build starts the watcher (watch = true by default)
    assert eng.skills.watcher is not None and eng.skills.watcher.running
    assert "original alpha description" in text and ctx.state["skills_mode"] == "inline"
    time.sleep(0.2)

    # Edit.
    write_skill(root, "alpha", "edited alpha description")
    # Each change shows up in the next build within a second (500 ms debounce + scan).
    _eventually(lambda: "edited alpha description" in (_render(eng)[0] or ""))

    # Add a new skill folder (a new sub-folder of a watched root).
    write_skill(root, "beta", "brand new beta")
    _eventually(lambda: "<slug>beta</slug>" in (_render(eng)[0] or ""))
    # Edit inside the new folder: new sub-folders are watched too.
    write_skill(root, "beta", "beta edited later")
    _eventually(lambda: "beta edited later" in (_render(eng)[0] or ""))

    # Remove.
    shutil.rmtree(root / "alpha")
    _eventually(lambda: "<slug>alpha</slug>" not in (_render(eng)[0] or ""))
    assert [s.slug for s in eng.skills.list()] == ["beta"]


def test_hot_reload_root_created_later(make_engine, workspace: Path, home: Path) -> None:  # type: ignore[no-untyped-def]
    eng = make_engine(plugins=no_builtin(embeddings={"provider": "none"}))
    eng.agents.create("bot")
    text, ctx = _render(eng)
    assert text is None and ctx.state["skills_mode"] is None
    time.sleep(0.2)
    # ~/.agents does not exist yet: the watcher covers HOME until the root appears.
    write_skill(home / ".agents" / "skills", "late", "arrived after start")
    _eventually(lambda: "arrived after start" in (_render(eng)[0] or ""))
    write_skill(home / ".agents" / "skills", "later", "second one")
    _eventually(lambda: "<slug>later</slug>" in (_render(eng)[0] or ""))


def test_debounce_collapses_bursts_and_close_stops(make_engine, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    root = workspace / "skills"
    root.mkdir()
    eng = make_engine(plugins=no_builtin(embeddings={"provider": "none"}))
    watcher = eng.skills.watch()
    time.sleep(0.2)
    version = eng.skills.version
    for i in range(10):
        write_skill(root, f"burst{i}", "x")
        time.sleep(0.02)
    _eventually(lambda: eng.skills.version > version, timeout=3.0)
    time.sleep(0.8)
    assert eng.skills.version - version <= 2  # one burst, one (or two) bumps, not ten
    assert len(eng.skills.list()) == 10
    eng.close()
    assert not watcher.running
