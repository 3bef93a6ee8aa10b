"""Plugin ``goclaw.skills``. No-op default (no tiers) until issue 4 lands."""

from __future__ import annotations

from typing import Any

from goclaw import hookimpl


@hookimpl
def goclaw_skill_tiers() -> list[Any]:
    return []
