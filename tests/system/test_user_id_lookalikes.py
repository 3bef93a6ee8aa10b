"""User ids and token names with a line break, a control character or a leading or trailing
space are refused with one line on every surface (Python, tools, CLI, HTTP tokens, MCP): they
would make look-alike users (" ann" beside "ann") and inject lines into prompts and logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from goclaw.contracts.tools import ToolContext, check_user_id
from goclaw.errors import ValidationError
from goclaw.forget import Forgetter
from tests.helpers import run_cli

BAD_USERS = [
    "ann\nben",
    " ann",
    "ann ",
    "ann\t",
    "an\x1bn",
    "ann\u2028",
    "ann\u00a0",
    "\u200bann",
    "",
    ".ann",
    "a/b",
]


@pytest.mark.parametrize("bad", BAD_USERS)
def test_bad_user_ids_are_refused_everywhere(
    engine: Any, workspace: Path, database_url: str | None, bad: str
) -> None:
    engine.agents.create("ada")
    with pytest.raises(ValidationError) as err:
        check_user_id(bad)
    assert "\n" not in str(err.value)
    with pytest.raises(ValidationError):
        ToolContext(agent="ada", user=bad)
    if bad:  # "" is the agent level on these
        with pytest.raises(ValidationError):
            engine.memory.writer.add("ada", "a note", user=bad)
        with pytest.raises(ValidationError):
            engine.memory.search("note", "ada", bad)
        with pytest.raises(ValidationError):
            engine.files.set("ada", "USER.md", "x", user=bad)
        with pytest.raises(ValidationError):
            Forgetter(engine, bad, "ada")
        cli = run_cli(
            ["memory", "add", "a note", "-a", "ada", "-u", bad],
            workspace=workspace,
            database_url=database_url,
        )
        assert cli.code != 0 and "invalid user id" in cli.err and "Traceback" not in cli.err
        assert len(cli.err.strip().splitlines()) == 1, cli.err
    assert not (engine.agent_dir(engine.agents.get("ada")) / "users").exists()


def test_good_user_ids_still_pass() -> None:
    for good in ("ann", "Ann Lee", "ann@example.com", "user-42", "Zoë", "王"):
        assert check_user_id(good) == good


@pytest.mark.parametrize("bad", ["ops\nadmin", " ops", "ops ", "o\x00ps", ""])
def test_bad_token_names_and_users_are_refused(workspace: Path, bad: str) -> None:
    from goclaw_http.tokens import TokenStore

    store = TokenStore(workspace)
    with pytest.raises(ValidationError) as err:
        store.create(bad)
    assert "\n" not in str(err.value)
    if bad:
        with pytest.raises(ValidationError):
            store.create("ok", users=[bad])
    assert store.records() == []
    cli = run_cli(["serve", "token", "create", bad or "x", "-u", " ann"], workspace=workspace)
    assert cli.code != 0 and "Traceback" not in cli.err and len(cli.err.strip().splitlines()) == 1


def test_http_token_and_mcp_scope_refuse_lookalike_users(workspace: Path) -> None:
    from goclaw_http.tokens import TokenStore

    store = TokenStore(workspace)
    store.create("admin")
    record = store.records()[0]
    for bad in ("ann\n", " ann"):
        with pytest.raises(ValidationError):
            record.check("ada", bad)
    pytest.importorskip("mcp")
    from goclaw_mcp.server import McpScope

    class _Request:
        headers: ClassVar[dict[str, str]] = {"x-goclaw-user": "ann\nben"}

    with pytest.raises(ValidationError):
        McpScope("ada", user_header="x-goclaw-user").context(_Request())
    with pytest.raises(ValidationError):
        McpScope("ada", user=" ann").context(None)
