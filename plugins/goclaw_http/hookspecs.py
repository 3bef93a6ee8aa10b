"""The hook of the HTTP plugin: other plugins add their endpoints to ``goclaw serve`` through it.

``goclaw.http`` declares it in its manifest (``HOOKSPECS``), so it exists whenever goclaw is
installed, even with the plugin disabled or its extra missing, and a plugin implements it like any
goclaw hook, with the ``goclaw.hookimpl`` marker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

hookspec = pluggy.HookspecMarker("goclaw")  # goclaw's project name: these are goclaw hooks

HOOK_NAMES = ("goclaw_http_routes",)


@hookspec
def goclaw_http_routes(engine: Host, auth: Callable[..., Any]) -> Any:
    """Contribute endpoints to the HTTP API (``goclaw serve``): return a FastAPI ``APIRouter``.

    Args: ``engine`` — the served engine; ``auth`` — the FastAPI dependency that checks the
    bearer token and returns its record: declare ``tok: Annotated[Any, Depends(auth)]`` on
    each endpoint and call ``tok.check(agent, user)`` before any work (raises when the token's
    scope does not cover them). Paths are relative to ``/v1``.
    Semantics: all collected when the server starts; each router is included under ``/v1`` in
    plugin-name order, after the server's own endpoints (health, agents, workers) and before
    the tools. Import FastAPI inside the hook (the server's optional dependency), never at the
    top of the plugin module. A goclaw error raised by an endpoint becomes the one-line JSON
    error with its status (404, 422, ...).
    Default plugins: ``goclaw.prompt`` (``/prompt``), ``goclaw.context_files`` (``/files``),
    ``goclaw.skills`` (``/skills``), ``goclaw.memory`` (``/memory``, ``/sessions``),
    ``goclaw.kg`` (``/kg``).
    """


def routes(host: Host, auth: Callable[..., Any]) -> list[tuple[str, Any]]:
    """``[(plugin, router)]`` from ``goclaw_http_routes``, in plugin-name order."""
    found = host.hooks.call("goclaw_http_routes", engine=host, auth=auth)
    return sorted(((plugin or "a hook wrapper", router) for plugin, router in found), key=lambda p: p[0])
