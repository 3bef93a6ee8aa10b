"""Plugin ``goclaw.consolidation``. No workers until issue 6 lands."""

from __future__ import annotations

from typing import Any

from goclaw import hookimpl


@hookimpl
def goclaw_consolidation_workers() -> list[Any]:
    return []
