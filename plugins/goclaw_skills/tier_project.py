"""Plugin ``goclaw.skills.tier.project``: the project skill tier."""

from __future__ import annotations

from typing import Any

from goclaw import hookimpl
from goclaw_skills.tiers import project_tier


@hookimpl
def goclaw_skill_tiers() -> list[Any]:
    return [project_tier()]
