"""``goclaw serve``: the HTTP API, a FastAPI app served by uvicorn.

The operations of the CLI contract (prompt, files, skills, memory, sessions, workers, kg) plus
the tools of the tool calling contract, under ``/v1``; OpenAPI at ``/openapi.json`` and docs at
``/docs``. Every request but ``/v1/health`` carries ``Authorization: Bearer <token>``; a token is
scoped to agents and users (:mod:`goclaw_http.tokens`) and the scope is checked before any
work. Errors are one line of JSON: ``{"error": {"type": ..., "message": ...}}``. Request bodies
are limited in size (1 MiB by default; 413 above).

Engine calls are synchronous: FastAPI runs each endpoint in its worker thread pool, so requests
proceed concurrently and the database does its own locking.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from goclaw.errors import (
    ConfigError,
    FeatureUnavailableError,
    GoclawError,
    NotFoundError,
    PermissionDeniedError,
    PluginError,
    StoreError,
    ValidationError,
)
from goclaw_http.tokens import TokenFileError

if TYPE_CHECKING:
    from fastapi import FastAPI

    from goclaw.contracts.host import Host
    from goclaw_http.tokens import TokenStore

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY = 1024 * 1024
STATUS = {
    NotFoundError: 404,
    ValidationError: 422,
    ConfigError: 400,
    PermissionDeniedError: 403,
    FeatureUnavailableError: 501,
    StoreError: 503,
    PluginError: 500,  # a plugin failed (its message names it): the server's problem, not the client's
}


class AuthError(GoclawError):
    """Missing or unknown bearer token."""


def status_for(exc: GoclawError) -> int:
    if isinstance(exc, AuthError):
        return 401
    if isinstance(exc, TokenFileError):  # the server's own file: not the client's mistake
        return 500
    for cls, code in STATUS.items():
        if isinstance(exc, cls):
            return code
    return 400


def error_body(kind: str, message: str) -> dict[str, Any]:
    # A lone surrogate (from a JSON "\\ud800" escape) cannot be encoded as UTF-8: shown escaped,
    # so that rendering the error never fails and never drops the connection.
    text = str(message).encode("utf-8", "backslashreplace").decode("utf-8")
    return {"error": {"type": kind, "message": " ".join(text.split())}}


Scope = dict[str, Any]


class BodyLimit:
    """ASGI middleware: refuse request bodies over ``max_body`` bytes with a JSON 413.

    The body is read here, before the app sees it, whether declared (``Content-Length``) or
    chunked, so an oversized body is refused as such and not as a body the app failed to parse.
    """

    def __init__(self, app: Any, max_body: int) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            await self._refuse(send)
            return
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            seen += len(chunks[-1])
            if seen > self.max_body:
                await self._refuse(send)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def buffered() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()  # after the body: wait for the disconnect
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, buffered, send)

    async def _refuse(self, send: Any) -> None:
        import json

        body = json.dumps(error_body("PayloadTooLarge", f"request body over {self.max_body} bytes")).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),  # the rest of the body is left unread
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def create_app(
    engine: Host,
    tokens: TokenStore | None,
    *,
    max_body: int = DEFAULT_MAX_BODY,
) -> Any:
    """The ASGI app for ``engine``; ``tokens=None`` disables auth (loopback development only)."""
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException

    from goclaw_http.routes import build_router

    app = FastAPI(
        title="goclaw",
        version=_version(),
        description="The goclaw context engine over HTTP: prompt, context files, skills, memory, "
        "sessions, workers, knowledge graph and the runtime tools. Bearer-token auth.",
    )

    @app.exception_handler(GoclawError)
    async def goclaw_error(_request: Request, exc: GoclawError) -> JSONResponse:
        status = status_for(exc)
        if status >= 500 and exc.__cause__ is not None:  # what it wraps: in the server's log
            log.error("%s", exc, exc_info=exc.__cause__)
        return JSONResponse(error_body(type(exc).__name__, str(exc)), status_code=status)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return JSONResponse(
            error_body("ValidationError", f"{where}: {first.get('msg')}" if where else str(first.get("msg"))),
            status_code=422,
        )

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        off = disabled_feature(engine, request.url.path) if exc.status_code == 404 else None
        if off is not None:
            return JSONResponse(error_body("FeatureUnavailableError", off), status_code=501)
        return JSONResponse(error_body("HTTPError", str(exc.detail)), status_code=exc.status_code)

    @app.exception_handler(UnicodeError)
    async def not_unicode(_request: Request, exc: UnicodeError) -> JSONResponse:
        # Text a JSON escape made invalid (a lone surrogate) fails where it is first encoded.
        return JSONResponse(
            error_body("ValidationError", "request text is not valid Unicode (a lone surrogate)"),
            status_code=422,
        )

    @app.exception_handler(Exception)
    async def internal(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("internal error")
        return JSONResponse(error_body("InternalError", f"{type(exc).__name__}: {exc}"), status_code=500)

    app.include_router(build_router(engine, tokens))
    app.add_middleware(BodyLimit, max_body=max_body)
    return app


def disabled_feature(engine: Host, path: str) -> str | None:
    """Why no endpoint answers ``path`` when its feature's plugin is off, else None.

    A feature's endpoints live under ``/v1/<service>`` (``/v1/memory``, ``/v1/sessions``,
    ``/v1/kg``, ...), named after the service its plugin's manifest declares; when that plugin
    is disabled (or failed) the path answers 501 naming it, not 404."""
    parts = path.split("/")
    if len(parts) < 3 or parts[1] != "v1" or not parts[2]:
        return None
    owner = engine.hooks.manager.service_owner(parts[2])
    if owner is None or owner[1] == "active":
        return None
    status = "disabled" if owner[1] == "blocked" else owner[1]
    return f"{path}: the '{parts[2]}' feature is not available: plugin {owner[0]} is {status}"


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("goclaw")
    except Exception:  # pragma: no cover - running from a source tree
        return "0"


def serve(
    engine: Host,
    tokens: TokenStore | None,
    *,
    host: str,
    port: int,
    max_body: int = DEFAULT_MAX_BODY,
    workers: bool = False,
) -> None:
    """Run the app with uvicorn (blocking); ``workers`` also serves the consolidation queue."""
    import threading

    import uvicorn

    stop = threading.Event()
    if workers:
        threading.Thread(target=engine.run_workers, args=(stop,), name="goclaw-workers", daemon=True).start()
    app: FastAPI = create_app(engine, tokens, max_body=max_body)
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        stop.set()
