"""``goclaw prompt`` through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import run_cli


def cli(workspace: Path, database_url: Any, *args: str) -> Any:
    return run_cli(list(args), workspace=workspace, database_url=database_url)


def test_prompt_json_shape_and_text_output(workspace: Path, database_url: Any) -> None:
    assert cli(workspace, database_url, "agent", "create", "pre", "--type", "predefined").code == 0
    res = cli(workspace, database_url, "prompt", "--agent", "pre", "--user", "u", "--json")
    assert res.code == 0, res.err
    data = json.loads(res.out)
    assert {"prompt", "mode", "sections", "files", "skills_mode", "activated_skill"} <= set(data)
    assert data["mode"] == "full"
    assert all(set(s) == {"name", "chars"} for s in data["sections"])
    assert all({"name", "chars", "truncated"} <= set(f) for f in data["files"])
    files = {f["name"]: f for f in data["files"]}
    assert set(files) == {
        "AGENTS.md",
        "SOUL.md",
        "IDENTITY.md",
        "USER.md",
        "BOOTSTRAP.md",
        "USER_PREDEFINED.md",
    }
    assert files["SOUL.md"]["truncated"] is False
    soul = (Path(__file__).resolve().parents[3] / "templates" / "SOUL.md").read_text(encoding="utf-8")
    assert files["SOUL.md"]["chars"] == len(soul)
    text = cli(workspace, database_url, "prompt", "--agent", "pre", "--user", "u")
    assert text.code == 0
    assert text.out == data["prompt"]


def test_prompt_cli_options_reach_the_request(workspace: Path, database_url: Any) -> None:
    cli(workspace, database_url, "agent", "create", "op")
    res = cli(
        workspace,
        database_url,
        "prompt",
        "-a",
        "op",
        "-u",
        "u",
        "--session-key",
        "agent:op:subagent:7",
        "--tool",
        "spawn=start a helper",
        "--sandbox",
        "--extra",
        "focus",
        "--channel",
        "slack",
        "--json",
    )
    data = json.loads(res.out)
    assert data["mode"] == "minimal"
    assert [f["name"] for f in data["files"]] == ["AGENTS.md", "TOOLS.md"]
    names = [s["name"] for s in data["sections"]]
    assert "sandbox" in names and "subagent_spawning" in names and "extra_context" in names
    assert "- spawn: start a helper" in data["prompt"]
    assert "<extra_context>\nfocus\n</extra_context>" in data["prompt"]


def test_explicit_full_mode_cannot_widen_a_subagent_or_cron_session(
    workspace: Path, database_url: Any
) -> None:
    # `--mode full` with a subagent key must not give the subagent SOUL.md, USER.md, BOOTSTRAP.md.
    cli(workspace, database_url, "agent", "create", "op")
    for key in ("agent:op:subagent:7", "agent:op:cron:nightly"):
        res = cli(
            workspace,
            database_url,
            "prompt",
            "-a",
            "op",
            "-u",
            "u",
            "--session-key",
            key,
            "--mode",
            "full",
            "--json",
        )
        assert res.code == 0, res.err
        data = json.loads(res.out)
        assert data["mode"] == "minimal"
        assert [f["name"] for f in data["files"]] == ["AGENTS.md", "TOOLS.md"]
    res = cli(workspace, database_url, "prompt", "-a", "op", "-u", "u", "--mode", "minimal", "--json")
    assert json.loads(res.out)["mode"] == "minimal"


def test_prompt_errors_are_one_line(workspace: Path, database_url: Any) -> None:
    res = cli(workspace, database_url, "prompt", "--agent", "ghost")
    assert res.code != 0
    assert res.err.startswith("error: unknown agent 'ghost'") and res.err.count("\n") == 1
    cli(workspace, database_url, "agent", "create", "op")
    res = cli(workspace, database_url, "prompt", "--agent", "op", "--mode", "weird")
    assert res.code != 0 and "unknown prompt mode" in res.err
