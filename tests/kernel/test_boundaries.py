"""Contracts, not imports (DESIGN.md §3, issue 13): the kernel imports no plugin and no plugin
imports another plugin; disabling a plugin leaves the prompt's truncation budget intact."""

from __future__ import annotations

import ast
from pathlib import Path

from goclaw.engine import Engine

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_PACKAGES = sorted(p.name for p in (ROOT / "plugins").iterdir() if p.name.startswith("goclaw_"))

# Imports that cross a boundary today, each to be replaced by a contract. The test fails when a
# new one appears *and* when one listed here is fixed (so the list only shrinks).
KNOWN_VIOLATIONS: set[tuple[str, str]] = set()


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _crossings() -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for path in sorted((ROOT / "goclaw").rglob("*.py")):
        for package in _imported_packages(path) & set(PLUGIN_PACKAGES):
            found.add((path.relative_to(ROOT).as_posix(), package))
    for own in PLUGIN_PACKAGES:
        for path in sorted((ROOT / "plugins" / own).rglob("*.py")):
            for package in _imported_packages(path) & (set(PLUGIN_PACKAGES) - {own}):
                found.add((path.relative_to(ROOT).as_posix(), package))
    return found


def test_the_checker_sees_an_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from goclaw_memory.flush import x\nimport goclaw_skills.search as s\n")
    assert _imported_packages(module) >= {"goclaw_memory", "goclaw_skills"}


def test_kernel_imports_no_plugin_and_no_plugin_imports_another() -> None:
    found = _crossings()
    new = sorted(found - KNOWN_VIOLATIONS)
    fixed = sorted(KNOWN_VIOLATIONS - found)
    assert not new, f"imports across a plugin boundary (use goclaw.contracts / services / hooks): {new}"
    assert not fixed, f"fixed, remove from KNOWN_VIOLATIONS: {fixed}"


def test_truncation_holds_with_bootstrap_disabled(workspace: Path) -> None:
    """Issue 13: with goclaw.bootstrap off, a 5,000-character AGENTS.md used to enter whole."""
    (workspace / "goclaw.toml").write_text(
        '[plugins]\ndisable = ["goclaw.bootstrap"]\n[plugins.prompt]\nmax_chars_per_file = 1000\n'
    )
    with Engine.open(workspace) as engine:
        engine.agents.create("ada")
        engine.files.set("ada", "AGENTS.md", "a" * 2500 + "\n" + "z" * 2499)
        result = engine.prompt.build_for("ada")
    [agents] = [f for f in result.files if f["name"] == "AGENTS.md"]
    assert agents["original_chars"] == 5000
    assert agents["truncated"] and agents["chars"] <= 1000
    assert "[...truncated, read AGENTS.md for full content...]" in result.prompt
    assert "a" * 701 not in result.prompt and "z" * 200 in result.prompt


def test_truncation_settings_are_the_prompts(workspace: Path) -> None:
    with Engine.open(workspace, plugins={"prompt": {"total_max_chars": 300}}) as engine:
        assert engine.plugin_settings("prompt").total_max_chars == 300
        assert not hasattr(engine.plugin_settings("bootstrap"), "total_max_chars")
