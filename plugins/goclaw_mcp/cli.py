"""``goclaw mcp``: serve the memory, skill and context-file tools and the system prompt over MCP."""

from __future__ import annotations

import click

from goclaw.contracts.cli import engine
from goclaw.errors import FeatureUnavailableError, ValidationError


@click.command("mcp")
@click.option("--agent", "-a", required=True, help="The agent every call is scoped to.")
@click.option("--user", "-u", default=None, help="The user every call is scoped to (default: agent level).")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio (a client starts this command) or streamable HTTP.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP: address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="HTTP: port.")
@click.option("--path", "http_path", default="/mcp", show_default=True, help="HTTP: endpoint path.")
@click.option(
    "--user-header",
    default=None,
    help="HTTP without --user: take each request's user from this header (e.g. X-Goclaw-User). "
    "Only behind something that authenticates clients: a client can name any user.",
)
def mcp_cmd(
    agent: str,
    user: str | None,
    transport: str,
    host: str,
    port: int,
    http_path: str,
    user_header: str | None,
) -> None:
    """Run an MCP server scoped to one agent (and user)."""
    try:
        import mcp  # noqa: F401  (the mcp extra: the official MCP SDK)
    except ImportError as exc:
        raise FeatureUnavailableError(
            f"goclaw mcp needs the mcp extra ({exc.name or exc} is missing): pip install 'goclaw[mcp]'"
        ) from None
    from goclaw_mcp.server import McpScope, run_http, run_stdio

    if user_header and user:
        raise ValidationError("--user-header and --user exclude each other")
    if user_header and transport != "http":
        raise ValidationError("--user-header needs --transport http")
    eng = engine()
    eng.agents.get(agent)
    scope = McpScope(agent=agent, user=user, user_header=user_header.lower() if user_header else None)
    if transport == "stdio":
        run_stdio(eng, scope)
    else:
        click.echo(f"goclaw MCP server on http://{host}:{port}{http_path} (agent {agent})", err=True)
        run_http(eng, scope, host=host, port=port, path=http_path)
