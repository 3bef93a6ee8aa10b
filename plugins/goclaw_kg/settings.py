"""``[plugins.kg]``: the knowledge graph and its workers (semantic, dedup).
``consolidation_enabled`` is also a per-agent key (``agents.settings``).
The deprecated ``[plugins.consolidation]`` table still works (its keys are routed here, with a
warning).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from goclaw.contracts.agents import agent_override
from goclaw.contracts.host import settings_or_defaults


class KGSettings(BaseModel):
    """``[plugins.kg]``"""

    llm_timeout_seconds: float = Field(default=30.0, gt=0)
    consolidation_enabled: bool = Field(default=True, description="extract facts from new episodes")
    redact: bool = Field(default=True, description="redact secrets in KG facts")
    # dedup: safe by default; see docs/consolidation.md
    dedup_auto_merge_cosine: float = Field(default=0.95, ge=0, le=1)
    dedup_auto_merge_name: float = Field(default=0.985, ge=0, le=1)
    dedup_candidate_cosine: float = Field(default=0.85, ge=0, le=1)
    dedup_candidate_name: float = Field(default=0.90, ge=0, le=1)
    # semantic: a new current relation of one of these types replaces the previous one
    exclusive_relation_types: list[str] = Field(
        default_factory=lambda: ["works_at", "lives_in", "reports_to", "located_in"]
    )


def settings_of(engine: Any) -> KGSettings:
    """The table; defaults when ``goclaw.kg`` is disabled but one of its workers is not."""
    return settings_or_defaults(engine, "kg", KGSettings)


def agent_setting(engine: Any, agent: Any, key: str) -> Any:
    """The agent's own value for ``key`` (``agents.settings``), else the table's."""
    return agent_override(agent, key, getattr(settings_of(engine), key))
