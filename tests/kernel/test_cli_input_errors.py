"""Garbage input through the real CLI entry point gives one line on stderr, never "internal
error": arguments and standard input that are not UTF-8, a goclaw.toml that is not
UTF-8 or is nested thousands deep, deeply nested JSON, numbers too large for the database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import CliResult, run_cli

BIG = str(10**23)


def _one_line_error(res: CliResult, *needles: str) -> None:
    assert res.code == 2, (res.code, res.err)
    assert res.err.startswith("error: ") and res.err.count("\n") == 1, res.err
    assert "internal error" not in res.err and "Traceback" not in res.err, res.err
    for needle in needles:
        assert needle in res.err, res.err


@pytest.fixture
def ws(workspace: Path) -> Path:
    assert run_cli(["init"], workspace=workspace).code == 0
    assert run_cli(["agent", "create", "op"], workspace=workspace).code == 0
    return workspace


# Python turns each invalid byte of argv into a lone surrogate (surrogateescape): "\udcff" is b"\xff".
@pytest.mark.parametrize(
    "args",
    [
        ["files", "get", "--agent", "op\udcff", "SOUL.md"],
        ["memory", "search", "q", "--agent", "op", "--user", "u\udcff"],
        ["session", "append", "--agent", "op", "--key", "k", "--role", "user", "hi \udcff"],
        ["memory", "add", "-a", "op", "text \udcff"],
        ["--workspace", "/tmp/w\udcff", "agent", "list"],
    ],
    ids=["files-get", "memory-search-user", "session-append", "memory-add", "workspace"],
)
def test_arguments_that_are_not_utf8(ws: Path, args: list[str]) -> None:
    _one_line_error(run_cli(args, workspace=ws), "is not valid UTF-8", "\\xff")


def test_standard_input_that_is_not_utf8(ws: Path) -> None:
    res = run_cli(["memory", "add", "-a", "op", "-"], workspace=ws, stdin=b"caf\xe9 au lait")
    _one_line_error(res, "not valid UTF-8")
    res = run_cli(["channel-memory", "ingest", "-a", "op", "-c", "slack"], workspace=ws, stdin=b"\xff\xfe")
    _one_line_error(res, "not valid UTF-8")


def test_a_goclaw_toml_that_is_not_utf8_or_nested_too_deeply(ws: Path) -> None:
    config = ws / "goclaw.toml"
    good = config.read_bytes()
    config.write_bytes(good + b"\n# caf\xe9\n")
    _one_line_error(run_cli(["agent", "list"], workspace=ws), "goclaw.toml: not UTF-8 text")
    config.write_bytes(b"x = " + b"[" * 20_000 + b"]" * 20_000 + b"\n")
    _one_line_error(
        run_cli(["agent", "list"], workspace=ws), "goclaw.toml: not valid TOML: nested too deeply"
    )
    config.write_bytes(b"x = " + b"{a=" * 5_000 + b"1" + b"}" * 5_000 + b"\n")
    _one_line_error(run_cli(["agent", "list"], workspace=ws), "nested too deeply")
    config.write_bytes(good)
    assert run_cli(["agent", "list"], workspace=ws).code == 0


def test_deeply_nested_json(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = "[" * 20_000 + "]" * 20_000
    monkeypatch.setenv("GOCLAW_PLUGINS", deep)
    _one_line_error(run_cli(["agent", "list"], workspace=ws), "GOCLAW_* environment", "nested too deeply")
    monkeypatch.delenv("GOCLAW_PLUGINS")
    res = run_cli(["channel-memory", "ingest", "-a", "op", "-c", "slack"], workspace=ws, stdin=deep + "\n")
    _one_line_error(res, "nested too deeply")


@pytest.mark.parametrize(
    "args",
    [
        ["session", "episodes", "-a", "op", "--limit", BIG],
        ["workers", "retry", "--event", BIG],
        ["channel-memory", "approve", BIG],
    ],
    ids=["session-episodes-limit", "workers-retry-event", "channel-memory-approve"],
)
def test_numbers_too_large_for_the_database(ws: Path, args: list[str]) -> None:
    _one_line_error(run_cli(args, workspace=ws), "a number is out of range")


def test_a_real_process_with_invalid_bytes_in_argv(ws: Path) -> None:
    """The same path as a user's shell: raw bytes in argv, decoded by Python itself."""
    env = {**os.environ, "GOCLAW_WORKSPACE": str(ws)}
    env.pop("GOCLAW_DEBUG", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from goclaw.cli import main; main()",
            "files",
            "get",
            "-a",
            b"op\xff",
            "SOUL.md",
        ],
        capture_output=True,
        timeout=120,
        env=env,
    )
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2 and err.count("\n") == 1 and "internal error" not in err, err
    assert err.startswith("error: argument 4 is not valid UTF-8: 'op\\xff'"), err
