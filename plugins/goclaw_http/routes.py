"""The ``/v1`` endpoints of ``goclaw serve`` (imported only when the server starts).

The server's own endpoints are the kernel's mechanisms: health, agents, one worker pass and the
runtime tools (whatever plugin contributed them). Every feature's endpoints are its plugin's,
added through the hook ``goclaw_http_routes``. Each endpoint checks the bearer token's scope for
its ``agent``/``user`` before doing anything, then calls the same engine service as the CLI
command of the same name. Every endpoint but health documents the error answers
(:data:`goclaw_http.bodies.ERROR_RESPONSES`) and the bearer security scheme.
"""

# No `from __future__ import annotations` here: FastAPI reads the endpoints' annotations, and
# the token dependency (`Tok`) is local to each route group.
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from goclaw.contracts.tools import ToolContext, export_schema
from goclaw.errors import PluginError
from goclaw_http.bodies import (
    ERROR_RESPONSES,
    AgentOut,
    HealthOut,
    ToolCallBody,
    ToolDeclarationOut,
    ToolResultOut,
    WorkersOut,
    documented,
)
from goclaw_http.hookspecs import routes
from goclaw_http.tokens import ANY, TokenRecord

if TYPE_CHECKING:
    from goclaw.contracts.host import Host
    from goclaw_http.tokens import TokenStore

ADMIN = TokenRecord(name="(no auth)", sha256="", agents=[ANY], users=[ANY])


def build_router(engine: "Host", tokens: "TokenStore | None") -> APIRouter:
    """The ``/v1`` router: health, then behind the token the server's own endpoints, each
    plugin's (hook ``goclaw_http_routes``, in plugin-name order) and the tools."""
    auth = _authenticator(tokens)
    r = APIRouter(prefix="/v1")
    r.add_api_route("/health", health, tags=["server"], **documented(HealthOut))
    scoped = APIRouter()
    _core_routes(scoped, engine, auth)
    for plugin, router in routes(engine, auth):
        if not isinstance(router, APIRouter):
            raise PluginError(
                f"plugin {plugin!r}: goclaw_http_routes returned {type(router).__name__}, not an APIRouter"
            )
        scoped.include_router(router)
    _tool_routes(scoped, engine, auth)
    r.include_router(scoped, responses=ERROR_RESPONSES)
    return r


def health() -> dict[str, Any]:
    return {"status": "ok"}


def _authenticator(tokens: "TokenStore | None") -> Callable[..., TokenRecord]:
    """The dependency that turns the ``Authorization`` header into the caller's token record
    (declared in the OpenAPI document as the ``bearer`` security scheme of every operation)."""
    from goclaw_http.server import AuthError

    bearer = HTTPBearer(
        scheme_name="bearer",
        description="A token of `goclaw serve token create`: `Authorization: Bearer gck_...`.",
        auto_error=False,
    )

    def auth(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> TokenRecord:
        if tokens is None:
            return ADMIN
        if credentials is None:
            raise AuthError("missing bearer token (Authorization: Bearer <token>)")
        record = tokens.verify(credentials.credentials.strip())
        if record is None:
            raise AuthError("unknown or revoked token")
        return record

    return auth


def _core_routes(r: APIRouter, engine: "Host", auth: Callable[..., TokenRecord]) -> None:
    """The agent list and one pass of the workers (``goclaw workers``)."""
    Tok = Annotated[TokenRecord, Depends(auth)]

    @r.get("/agents", tags=["agents"], **documented(list[AgentOut]))
    def agents(tok: Tok) -> list[dict[str, Any]]:
        tok.check(None, None)
        return [{"name": a.name, "type": a.agent_type} for a in engine.agents.list()]

    @r.post("/workers/run-once", tags=["workers"], **documented(WorkersOut))
    def workers_run_once(tok: Tok) -> dict[str, Any]:
        tok.check(None, None)
        return engine.run_workers()


def _tool_routes(r: APIRouter, engine: "Host", auth: Callable[..., TokenRecord]) -> None:
    """The runtime tools under the tool calling contract."""
    Tok = Annotated[TokenRecord, Depends(auth)]

    @r.get("/tools", tags=["tools"], **documented(list[ToolDeclarationOut]))
    def tools_list(
        tok: Tok, agent: str, user: str | None = None, format: str = "openai"
    ) -> list[dict[str, Any]]:
        tok.check(agent, user)
        return [export_schema(t, format) for t in engine.tools.list(ToolContext(agent, user))]

    @r.post("/tools/{name}", tags=["tools"], **documented(ToolResultOut))
    def tools_call(name: str, body: ToolCallBody, tok: Tok) -> dict[str, Any]:
        tok.check(body.agent, body.user)
        ctx = ToolContext(agent=body.agent, user=body.user, session=body.session, channel=body.channel)
        return engine.tools.call(name, body.arguments, ctx).as_json()
