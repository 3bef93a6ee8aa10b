"""Plugin ``goclaw.skills.tier.personal``: the personal skill tier."""

from __future__ import annotations

from typing import Any

from goclaw import hookimpl
from goclaw_skills.tiers import personal_tier


@hookimpl
def goclaw_skill_tiers() -> list[Any]:
    return [personal_tier()]
