"""The CLI contract: init, agent, files, plugins; errors on one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_cli


@pytest.fixture
def ws(workspace: Path, database_url: str | None) -> tuple[Path, str | None]:
    return workspace, database_url


def cli(ws: tuple[Path, str | None], *args: str, stdin: str | None = None):  # type: ignore[no-untyped-def]
    return run_cli(list(args), workspace=ws[0], database_url=ws[1], stdin=stdin)


def test_init_creates_workspace(ws: tuple[Path, str | None]) -> None:
    result = cli(ws, "init")
    assert result.code == 0, result.err
    root = ws[0]
    assert (root / "goclaw.toml").is_file()
    for folder in ("skills", ".agents/skills", "agents"):
        assert (root / folder).is_dir()
    # Idempotent, and never overwrites an edited config.
    (root / "goclaw.toml").write_text('product_name = "Mine"\n')
    assert cli(ws, "init").code == 0
    assert (root / "goclaw.toml").read_text() == 'product_name = "Mine"\n'


def _tables(ws: tuple[Path, str | None]) -> set[str]:
    """The database's tables, read without opening an engine (which would migrate)."""
    from sqlalchemy import inspect

    from goclaw.store.database import Database

    db = Database.for_workspace(ws[0].resolve(), ws[1])
    try:
        with db.engine.connect() as conn:
            return set(inspect(conn).get_table_names())
    finally:
        db.dispose()


def test_init_disable_writes_the_config_before_any_table(ws: tuple[Path, str | None]) -> None:
    result = cli(ws, "init", "--disable", "goclaw.kg", "--disable", "goclaw.skills")
    assert result.code == 0, result.err
    assert 'disable = ["goclaw.kg", "goclaw.skills"]' in (ws[0] / "goclaw.toml").read_text()
    tables = _tables(ws)
    assert "agents" in tables and not {t for t in tables if t.startswith(("kg_", "skill"))}
    again = cli(ws, "init", "--disable", "goclaw.kg")
    assert again.code != 0 and again.err.startswith("error: ") and "goclaw.toml exists" in again.err


def test_init_honours_the_environment_and_refuses_unknown_names(
    ws: tuple[Path, str | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = cli(ws, "init", "--disable", "goclaw.nope")
    assert bad.code != 0 and "known plugins:" in bad.err and not (ws[0] / "goclaw.toml").exists()
    monkeypatch.setenv("GOCLAW_PLUGINS__DISABLE", '["goclaw.kg"]')
    assert cli(ws, "init").code == 0
    assert not {t for t in _tables(ws) if t.startswith("kg_")}


def test_agent_create_and_list_json(ws: tuple[Path, str | None]) -> None:
    assert cli(ws, "agent", "create", "support", "--type", "predefined").code == 0
    assert cli(ws, "agent", "create", "scratch").code == 0
    result = cli(ws, "agent", "list", "--json")
    data = json.loads(result.out)
    assert [(a["name"], a["type"]) for a in data] == [("scratch", "open"), ("support", "predefined")]
    assert (ws[0] / "agents" / "support").is_dir()


def test_files_set_get_list_roundtrip(ws: tuple[Path, str | None]) -> None:
    cli(ws, "agent", "create", "a1")
    text = "# Soul\nKind, précis — and brief. 🦀\n"
    assert cli(ws, "files", "set", "--agent", "a1", "SOUL.md", stdin=text).code == 0
    assert cli(ws, "files", "get", "--agent", "a1", "SOUL.md").out == text
    assert cli(ws, "files", "set", "--agent", "a1", "--user", "u1", "USER.md", stdin="Name: Ada\n").code == 0
    agent_level = json.loads(cli(ws, "files", "list", "--agent", "a1", "--json").out)
    user_level = json.loads(cli(ws, "files", "list", "--agent", "a1", "--user", "u1", "--json").out)
    soul = next(f for f in agent_level if f["name"] == "SOUL.md")
    assert soul["chars"] == len(text) and soul["level"] == "agent"
    assert "USER.md" not in [f["name"] for f in agent_level]
    assert [f["name"] for f in user_level if f["name"] == "USER.md"] == ["USER.md"]
    assert cli(ws, "files", "get", "--agent", "a1", "--user", "u2", "USER.md").code == 3


@pytest.mark.parametrize(
    "args",
    [
        ["agent", "create", "Bad Name"],
        ["agent", "create"],
        ["agent", "create", "x", "--type", "weird"],
        ["files", "get", "--agent", "nobody", "SOUL.md"],
        ["files", "get", "--agent"],
        ["files", "set", "--agent", "a1", "../etc/passwd"],
        ["files", "set", "--agent", "a1", "C:\\evil.md"],
        ["nonsense-command"],
        ["prompt"],
        ["--workspace"],
    ],
)
def test_garbage_gives_one_line_error(ws: tuple[Path, str | None], args: list[str]) -> None:
    cli(ws, "agent", "create", "a1")
    result = cli(ws, *args, stdin="x")
    assert result.code != 0
    assert "Traceback" not in result.err
    assert result.err.startswith("error: ")
    assert result.err.count("\n") == 1, result.err


def test_console_script_help_runs(tmp_path: Path) -> None:
    """The installed `goclaw` executable works (speed is measured in benchmarks/)."""
    exe = Path(sys.executable).with_name("goclaw")
    out = subprocess.run(
        [str(exe), "--help"], capture_output=True, text=True, cwd=tmp_path, env={**os.environ}, timeout=60
    )
    assert out.returncode == 0
    for command in (
        "init",
        "agent",
        "files",
        "prompt",
        "skills",
        "memory",
        "session",
        "workers",
        "kg",
        "plugins",
    ):
        assert f"  {command} " in out.stdout
    # --help must not import the heavy libraries.
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from goclaw.cli import cli; "
            "mods = ('litellm', 'numpy', 'sqlalchemy', 'watchdog', 'bm25s');"
            "heavy = [m for m in mods if m in sys.modules];"
            "print(','.join(heavy))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == ""
