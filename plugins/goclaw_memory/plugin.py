"""Plugin ``goclaw.memory``. No-op default (no search backends) until issue 5 lands."""

from __future__ import annotations

from typing import Any

from goclaw import hookimpl


@hookimpl
def goclaw_search_backends() -> dict[str, Any]:
    return {}
