"""Plugin ``goclaw.skills.tier.global``: the global skill tier."""

from __future__ import annotations

from typing import Any

from goclaw import hookimpl
from goclaw_skills.tiers import GlobalTier


@hookimpl
def goclaw_skill_tiers() -> list[Any]:
    return [GlobalTier()]
