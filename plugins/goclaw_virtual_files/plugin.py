"""Plugin ``goclaw.virtual_files``. No-op default until issue 3 lands."""

from __future__ import annotations

from typing import Any

from goclaw import hookimpl


@hookimpl
def goclaw_virtual_context_files(ctx: Any) -> None:
    return None
