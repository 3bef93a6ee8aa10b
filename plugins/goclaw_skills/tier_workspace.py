"""Plugin ``goclaw.skills.tier.workspace``: the workspace skill tier."""

from __future__ import annotations

from typing import Any

from goclaw import hookimpl
from goclaw_skills.tiers import workspace_tier


@hookimpl
def goclaw_skill_tiers() -> list[Any]:
    return [workspace_tier()]
