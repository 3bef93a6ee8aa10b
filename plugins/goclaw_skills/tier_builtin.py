"""Plugin ``goclaw.skills.tier.builtin``: the builtin skill tier."""

from __future__ import annotations

from typing import Any

from goclaw import hookimpl
from goclaw_skills.tiers import builtin_tier


@hookimpl
def goclaw_skill_tiers() -> list[Any]:
    return [builtin_tier()]
