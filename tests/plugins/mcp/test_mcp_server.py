"""``goclaw mcp``: the official SDK's client against a real server process, over
stdio and streamable HTTP, on SQLite and PostgreSQL; scope escapes through MCP are refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from goclaw.errors import PermissionDeniedError
from tests.surfaces_helpers import free_port, goclaw_cmd, module_database, running, seed, server_env

pytest.importorskip("mcp")


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def mcp_ws(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp(f"mcp-{request.param}")
    with module_database(str(request.param)) as url:
        ws = root / "ws"
        home = root / "home"
        home.mkdir()
        seed(ws, url)
        base = [*goclaw_cmd(), "--workspace", str(ws)] + (["--database-url", url] if url else [])
        yield {"ws": ws, "base": base, "env": server_env(home)}


@pytest.fixture(scope="module")
def http_server(mcp_ws: dict[str, Any]) -> Iterator[str]:
    port = free_port()
    args = [*mcp_ws["base"], "mcp", "--agent", "ada", "--transport", "http", "--port", str(port)]
    with running([*args, "--user-header", "X-Goclaw-User"], mcp_ws["env"], port):
        yield f"http://127.0.0.1:{port}/mcp"


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def _scenario_u1(client: Any) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {"memory_search", "memory_get", "memory_add", "skill_search", "use_skill"} <= set(tools)
    assert {"read_context_file", "write_context_file"} <= set(tools)
    for tool in tools.values():
        props = set(tool.input_schema.get("properties", {}))
        assert not props & {"agent", "user", "session", "channel"}, tool.name
    res = await client.call_tool("memory_search", {"query": "Gutenberg vault"})
    assert not res.is_error
    hits = res.structured_content["hits"]
    paths = {h["path"] for h in hits}
    assert {"MEMORY.md", "users/u1/memory/2026-01-01.md"} <= paths
    assert all(p == "MEMORY.md" or p.startswith("users/u1/") for p in paths)
    mine = next(h for h in hits if h["path"] == "users/u1/memory/2026-01-01.md")
    # filters: a path prefix within the user's scope, the agent level only, a bad date
    res = await client.call_tool("memory_search", {"query": "Gutenberg", "filters": {"path": "memory/"}})
    found = [h["path"] for h in res.structured_content["hits"]]
    assert mine["path"] in found and all(p.startswith("users/u1/memory/") for p in found)
    res = await client.call_tool("memory_search", {"query": "Gutenberg", "filters": {"scope": "agent"}})
    assert {h["path"] for h in res.structured_content["hits"]} == {"MEMORY.md"}
    res = await client.call_tool("memory_search", {"query": "Gutenberg", "filters": {"since": "2026-13-01"}})
    assert res.is_error and "YYYY-MM-DD" in _text(res)
    got = await client.call_tool("memory_get", {"id": mine["id"]})
    assert not got.is_error and "4711" in _text(got)
    # escapes: scope keys in arguments, another user's path, a forged id
    for args in ({"query": "boat", "user": "u2"}, {"query": "boat", "agent": "bob"}):
        res = await client.call_tool("memory_search", args)
        assert res.is_error and "cannot be set by the model" in _text(res)
    res = await client.call_tool("memory_get", {"path": "users/u2/memory/2026-01-01.md"})
    assert res.is_error and "boat" not in _text(res)
    res = await client.call_tool("memory_get", {"id": mine["id"].replace("users/u1/", "users/u2/")})
    assert res.is_error and "boat" not in _text(res)
    res = await client.call_tool("memory_search", {"query": "boat Caxton"})
    assert all(
        h["path"] in ("MEMORY.md",) or h["path"].startswith("users/u1/")
        for h in res.structured_content["hits"]
    )
    # the system prompt, as a prompt and as a resource
    prompts = (await client.list_prompts()).prompts
    assert [p.name for p in prompts] == ["system_prompt"]
    prompt = await client.get_prompt("system_prompt", {})
    text = prompt.messages[0].content.text
    assert "Memory Recall" in text and "memory_search" in text
    resource = await client.read_resource("goclaw://prompt/system")
    assert resource.contents[0].text == text


def test_stdio_server_scoped_to_agent_and_user(mcp_ws: dict[str, Any]) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    cmd = mcp_ws["base"]
    params = StdioServerParameters(
        command=cmd[0], args=[*cmd[1:], "mcp", "--agent", "ada", "--user", "u1"], env=mcp_ws["env"]
    )

    async def main() -> None:
        async with Client(params) as client:
            await _scenario_u1(client)
            # a write through MCP lands in u1's own memory and is searchable at once
            res = await client.call_tool("memory_add", {"text": "u1 parks in spot 42 next to Gutenberg."})
            assert not res.is_error and res.structured_content["path"].startswith("users/u1/memory/")
            res = await client.call_tool("memory_search", {"query": "parks spot 42"})
            assert res.structured_content["hits"][0]["path"].startswith("users/u1/")

    anyio.run(main)


def test_unknown_tool_is_a_protocol_error(mcp_ws: dict[str, Any]) -> None:
    """An unknown tool is a JSON-RPC error; arguments that break a listed tool's schema are a
    result with isError, for the model to read and correct (MCP 2025-11-25)."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS

    cmd = mcp_ws["base"]
    params = StdioServerParameters(
        command=cmd[0], args=[*cmd[1:], "mcp", "--agent", "ada"], env=mcp_ws["env"]
    )

    async def main() -> None:
        async with Client(params) as client:
            for name in ("no_such_tool", "write_context_file"):  # the latter needs a user
                with pytest.raises(MCPError) as caught:
                    await client.call_tool(name, {"query": "x"})
                assert caught.value.code == INVALID_PARAMS, caught.value
                assert f"unknown tool {name!r}" in caught.value.message
                assert "memory_search" in caught.value.message  # what is available
            res = await client.call_tool("memory_search", {"limit": 3})
            assert res.is_error and "query" in _text(res)
            res = await client.call_tool("memory_search", {"query": "vault", "bogus": 1})
            assert res.is_error and "bogus" in _text(res)

    anyio.run(main)


async def _http_client(url: str, user: str | None, body: Any) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"X-Goclaw-User": user} if user else {}
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        await body(client)


def test_http_server_takes_the_user_per_connection(http_server: str) -> None:
    async def as_u2(client: Any) -> None:
        res = await client.call_tool("memory_search", {"query": "Gutenberg vault boat"})
        paths = {h["path"] for h in res.structured_content["hits"]}
        assert paths == {"MEMORY.md", "users/u2/memory/2026-01-01.md"}
        res = await client.call_tool("memory_get", {"path": "users/u1/memory/2026-01-01.md"})
        assert res.is_error and "4711" not in _text(res)

    async def agent_level(client: Any) -> None:
        res = await client.call_tool("memory_search", {"query": "Gutenberg vault boat"})
        assert {h["path"] for h in res.structured_content["hits"]} == {"MEMORY.md"}
        names = {t.name for t in (await client.list_tools()).tools}
        assert "write_context_file" not in names  # needs a user

    async def main() -> None:
        await _http_client(http_server, "u1", _scenario_u1)
        await _http_client(http_server, "u2", as_u2)
        await _http_client(http_server, None, agent_level)

    anyio.run(main)


def test_scope_refuses_a_header_naming_another_user() -> None:
    from goclaw_mcp.server import McpScope

    class Req:
        def __init__(self, user: str) -> None:
            self.headers = {"x-goclaw-user": user}

    fixed = McpScope(agent="ada", user="u1")
    assert fixed.context(Req("u1")).user == "u1" and fixed.context(None).user == "u1"
    with pytest.raises(PermissionDeniedError):
        fixed.context(Req("u2"))
    with pytest.raises(PermissionDeniedError):  # no --user-header: a header cannot pick a user
        McpScope(agent="ada").context(Req("u2"))
    assert McpScope(agent="ada", user_header="x-goclaw-user").context(Req("u2")).user == "u2"


def test_cli_refuses_bad_options(tmp_path: Path) -> None:
    from tests.helpers import run_cli

    res = run_cli(["mcp", "--agent", "ada", "--user", "u1", "--user-header", "X-U"], workspace=tmp_path)
    assert res.code != 0 and "exclude each other" in res.err
    res = run_cli(["mcp", "--agent", "nobody"], workspace=tmp_path)
    assert res.code != 0 and res.err.startswith("error:") and "Traceback" not in res.err


def test_the_tokenizer_loads_after_the_first_request_not_in_the_first_prompt(engine: Any) -> None:
    """The first listing is answered first; then a thread loads the tokenizer (its encoding is
    most of a cold prompt build), so the first prompt does not wait for it."""
    import threading

    from goclaw_mcp.server import McpScope, _Handlers

    engine.agents.create("ada")
    handlers = _Handlers(engine, McpScope(agent="ada", user="u1"), max_threads=2)
    assert "tokenizer" not in vars(engine)

    async def first_request() -> None:
        await handlers.list_tools(None, None)

    anyio.run(first_request)
    for thread in threading.enumerate():
        if thread.name == "goclaw-mcp-warm":
            thread.join(timeout=120)
    assert "tokenizer" in vars(engine)
