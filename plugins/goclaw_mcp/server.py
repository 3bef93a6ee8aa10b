"""``goclaw mcp``: an MCP server over stdio or streamable HTTP, on the official SDK.

What a client sees, scoped at start to one agent (and one user, or a user per HTTP connection):

* tools — every tool of ``host.tools`` for the scope (memory, skills, context files), with the
  model-facing schemas of the tool calling contract; results carry the text and, as
  ``structuredContent``, the data. A tool the server does not list is a JSON-RPC error
  (invalid params); a tool's own failure, arguments that break its schema included, is a
  result with ``isError`` for the model to read (MCP 2025-11-25);
* prompts and resources the plugins contribute (hook ``goclaw_mcp_prompts``): the prompt plugin's
  ``system_prompt``, also the resource ``goclaw://prompt/system``, is the assembled system prompt
  of the scope.

Scope is fixed by the server, never by a tool argument: ``agent``/``user`` in arguments are
refused by the contract. Over HTTP without a fixed ``--user``, a request may name its user in a
header (``X-Goclaw-User`` by default) when the server was started with ``--user-header``; with a
fixed user, a header naming another user is refused.

Engine calls are synchronous; each runs in a worker thread (at most ``max_threads`` at once).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from goclaw.contracts.hooks import McpPrompt
from goclaw.contracts.tools import ToolContext, ToolResult, export_schema
from goclaw.errors import GoclawError, PermissionDeniedError
from goclaw_mcp.hookspecs import prompts

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

log = logging.getLogger(__name__)

DEFAULT_USER_HEADER = "x-goclaw-user"


@dataclass(frozen=True)
class McpScope:
    """The scope a server was started with."""

    agent: str
    user: str | None = None
    user_header: str | None = None  # header naming the user per HTTP request (opt-in)

    def context(self, request: Any) -> ToolContext:
        user = self.user
        headers = getattr(request, "headers", None)
        claimed = headers.get(self.user_header or DEFAULT_USER_HEADER) if headers is not None else None
        if claimed:
            if self.user is not None and claimed != self.user:
                raise PermissionDeniedError(
                    f"this server is scoped to user {self.user!r}; header names another"
                )
            if self.user is None and not self.user_header:
                raise PermissionDeniedError(
                    "this server does not take the user from a header (start it with --user-header)"
                )
            user = claimed
        if user is not None:
            _check_user(user)
        return ToolContext(agent=self.agent, user=user)


def _check_user(user: str) -> None:
    from goclaw.contracts.tools import check_user_id

    check_user_id(user)


def _to_call_result(result: ToolResult) -> Any:
    import mcp_types as types

    data = result.data
    structured = data if isinstance(data, dict) else {"result": data}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result.text)],
        structured_content=structured,
        is_error=result.is_error,
    )


def build_server(engine: Host, scope: McpScope, *, max_threads: int = 8) -> Any:
    """The SDK ``Server`` serving ``engine`` for ``scope`` (run it with stdio or HTTP)."""
    from mcp.server import Server

    engine.agents.get(scope.agent)  # unknown agent: fail at start, not per call
    handlers = _Handlers(engine, scope, max_threads)
    return Server(
        "goclaw",
        instructions=(
            f"goclaw context engine for agent {scope.agent!r}: search and save long-term memory, "
            "find and load skills, read and write context files."
        ),
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_prompts=handlers.list_prompts,
        on_get_prompt=handlers.get_prompt,
        on_list_resources=handlers.list_resources,
        on_read_resource=handlers.read_resource,
    )


class _Handlers:
    """The MCP request handlers of one server: tools, and the plugins' prompts and resources.
    Each engine call runs in a worker thread (at most ``max_threads`` at once). Once the first
    of them has answered, a thread loads what later ones use (:func:`warm`): after the
    handshake and the first listing, so as not to slow them, and before the first prompt."""

    def __init__(self, engine: Host, scope: McpScope, max_threads: int) -> None:
        import anyio

        self.engine = engine
        self.scope = scope
        self.limiter = anyio.CapacityLimiter(max_threads)
        self._warmed = False

    async def _in_thread(self, fn: Any, *args: Any) -> Any:
        import anyio

        result = await anyio.to_thread.run_sync(fn, *args, limiter=self.limiter)
        if not self._warmed:
            self._warmed = True
            scoped = (self.engine, self.scope)
            threading.Thread(target=warm, args=scoped, name="goclaw-mcp-warm", daemon=True).start()
        return result

    def _context(self, ctx: Any) -> ToolContext:
        return self.scope.context(getattr(ctx, "request", None))

    # ------------------------------------------------------------------ tools
    async def list_tools(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        decls = await self._in_thread(self._tools, self._context(ctx))
        return types.ListToolsResult(
            tools=[
                types.Tool(name=d["name"], description=d["description"], input_schema=d["inputSchema"])
                for d in decls
            ]
        )

    def _tools(self, context: ToolContext) -> list[dict[str, Any]]:
        return [export_schema(t, "mcp") for t in self.engine.tools.list(context)]

    async def call_tool(self, ctx: Any, params: Any) -> Any:
        try:
            tool_ctx = self._context(ctx)
        except GoclawError as exc:
            return _to_call_result(ToolResult.error(exc))
        known = await self._in_thread(self._tool_names, tool_ctx)
        if params.name not in known:
            # A protocol error (JSON-RPC "invalid params"): the client asked for a tool this
            # server never listed. Arguments that break a listed tool's schema stay a result
            # with isError, which the model reads and corrects (MCP 2025-11-25).
            from mcp.shared.exceptions import MCPError
            from mcp_types import INVALID_PARAMS

            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}; available: {', '.join(known)}")
        result = await self._in_thread(self.engine.tools.call, params.name, params.arguments or {}, tool_ctx)
        return _to_call_result(result)

    def _tool_names(self, context: ToolContext) -> list[str]:
        return [t.name for t in self.engine.tools.list(context)]

    # ------------------------------------------------------------------ prompts and resources
    def _prompts(self) -> list[McpPrompt]:
        return prompts(self.engine)

    def _find(self, kind: str, key: str, found: dict[str, McpPrompt]) -> McpPrompt:
        if key not in found:
            raise ValueError(f"unknown {kind} {key!r}; available: {', '.join(found) or 'none'}")
        return found[key]

    async def _text(self, ctx: Any, prompt: McpPrompt, arguments: dict[str, str]) -> str:
        text: str = await self._in_thread(prompt.render, self._context(ctx), arguments)
        return text

    async def list_prompts(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        prompts = [
            types.Prompt(
                name=p.name,
                description=p.description.format(agent=repr(self.scope.agent)),
                arguments=[
                    types.PromptArgument(name=n, description=d, required=False) for n, d in p.arguments
                ],
            )
            for p in self._prompts()
        ]
        return types.ListPromptsResult(prompts=prompts)

    async def get_prompt(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        prompt = self._find("prompt", params.name, {p.name: p for p in self._prompts()})
        text = await self._text(ctx, prompt, dict(params.arguments or {}))
        return types.GetPromptResult(
            description=f"{prompt.title} of {self.scope.agent}",
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
        )

    def _resources(self) -> dict[str, McpPrompt]:
        return {p.uri: p for p in self._prompts() if p.uri}

    async def list_resources(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        resources = [
            types.Resource(
                uri=uri,
                name=p.title,
                description=p.description.format(agent=repr(self.scope.agent)),
                mime_type="text/markdown",
            )
            for uri, p in self._resources().items()
        ]
        return types.ListResourcesResult(resources=resources)

    async def read_resource(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        uri = str(params.uri)
        text = await self._text(ctx, self._find("resource", uri, self._resources()), {})
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)]
        )


def run_stdio(engine: Host, scope: McpScope) -> None:
    """Serve one client on stdin/stdout until it disconnects."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(engine, scope)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def warm(engine: Host, scope: McpScope) -> None:
    """Load what the first requests of a session use: the tool list of the scope and the
    tokenizer the prompt counts with (loading its encoding takes longer than building a prompt).
    A failure is left to the request that needs it to report."""
    try:
        engine.tools.list(ToolContext(agent=scope.agent, user=scope.user))
        engine.tokenizer.count("")
    except Exception:
        log.debug("warming the MCP server failed", exc_info=True)


def http_app(engine: Host, scope: McpScope, *, host: str = "127.0.0.1", path: str = "/mcp") -> Any:
    """The streamable HTTP ASGI app (Starlette) for ``scope``."""
    server = build_server(engine, scope)
    return server.streamable_http_app(streamable_http_path=path, host=host)


def run_http(engine: Host, scope: McpScope, *, host: str, port: int, path: str = "/mcp") -> None:
    import uvicorn

    uvicorn.run(http_app(engine, scope, host=host, path=path), host=host, port=port, log_level="warning")
