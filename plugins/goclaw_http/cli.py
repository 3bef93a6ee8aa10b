"""``goclaw serve``: the HTTP API; ``goclaw serve token create|list|revoke``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from goclaw.contracts.cli import emit_json, engine, json_option, print_table, workspace
from goclaw.errors import ConfigError, FeatureUnavailableError

if TYPE_CHECKING:
    from goclaw_http.tokens import TokenStore

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@click.group("serve", invoke_without_command=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8766, show_default=True, help="Port.")
@click.option(
    "--max-body",
    type=click.IntRange(1),
    default=1024 * 1024,
    show_default=True,
    help="Largest request body (bytes).",
)
@click.option("--workers", is_flag=True, help="Also serve the consolidation queue in this process.")
@click.option(
    "--no-auth",
    is_flag=True,
    help="Accept requests without a token (only on a loopback address, for development).",
)
@click.pass_context
def serve_group(
    ctx: click.Context, host: str, port: int, max_body: int, workers: bool, no_auth: bool
) -> None:
    """Serve the HTTP API (OpenAPI docs at /docs). Create a token first: goclaw serve token create."""
    if ctx.invoked_subcommand is not None:
        return
    try:
        import fastapi  # noqa: F401  (the http extra: FastAPI served by uvicorn)
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise FeatureUnavailableError(
            f"goclaw serve needs the http extra ({exc.name or exc} is missing): pip install 'goclaw[http]'"
        ) from None
    from goclaw_http.server import serve
    from goclaw_http.tokens import TokenStore

    eng = engine()
    tokens = TokenStore(eng.workspace)
    if no_auth:
        if host not in LOOPBACK:
            raise ConfigError("--no-auth is only allowed on a loopback address (127.0.0.1, localhost, ::1)")
        store = None
    else:
        if not tokens.records():
            raise ConfigError(
                "no API tokens yet: create one with `goclaw serve token create NAME` (or use --no-auth)"
            )
        store = tokens
    click.echo(f"goclaw API on http://{host}:{port} (docs at /docs)", err=True)
    serve(eng, store, host=host, port=port, max_body=max_body, workers=workers)


@serve_group.group("token")
def token_group() -> None:
    """Bearer tokens for the HTTP API (stored hashed in .goclaw/api_tokens.json)."""


def _store() -> TokenStore:
    from goclaw_http.tokens import TokenStore

    return TokenStore(workspace())


@token_group.command("create")
@click.argument("name")
@click.option(
    "--agent", "-a", "agents", multiple=True, help="An agent it may access (repeatable; default all)."
)
@click.option("--user", "-u", "users", multiple=True, help="A user it may act for (repeatable; default any).")
@json_option
def token_create(name: str, agents: tuple[str, ...], users: tuple[str, ...], as_json: bool) -> None:
    """Create a token; its secret is printed once."""
    store = _store()
    secret = store.create(name, list(agents), list(users))
    if as_json:
        emit_json(
            {"name": name, "token": secret, "agents": list(agents) or ["*"], "users": list(users) or ["*"]}
        )
    else:
        click.echo(secret)
        click.echo("store it now: only its hash is kept", err=True)


@token_group.command("list")
@json_option
def token_list(as_json: bool) -> None:
    """List tokens (names and scopes, never secrets)."""
    store = _store()
    rows = [r.public() for r in store.records()]
    if as_json:
        emit_json(rows)
        return
    print_table(
        ["name", "agents", "users", "created"],
        [(r["name"], ",".join(r["agents"]), ",".join(r["users"]), r["created_at"]) for r in rows],
    )


@token_group.command("revoke")
@click.argument("name")
def token_revoke(name: str) -> None:
    """Revoke a token (takes effect on the next request)."""
    store = _store()
    store.revoke(name)
    click.echo(f"revoked {name}")
