"""``[plugins.episodic]``: episodic memory, its Memory Context auto-injection and its workers
(episodic, dreaming, retention).

Per-agent overrides live in ``agents.settings`` under these keys (``auto_inject_enabled``,
``auto_inject_threshold``, ``auto_inject_max_tokens``, ``episodic_ttl_days``,
``consolidation_enabled``); :func:`agent_setting` reads them with this table as the default.
The deprecated ``[plugins.consolidation]`` table still works (its keys are routed here, with a
warning).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from goclaw.contracts.agents import agent_override
from goclaw.contracts.host import settings_or_defaults


class EpisodicSettings(BaseModel):
    """``[plugins.episodic]``"""

    llm_timeout_seconds: float = Field(default=30.0, gt=0)
    # episodic
    consolidation_enabled: bool = True
    episodic_ttl_days: int = Field(default=90, ge=0, description="0 = never expires")
    redact: bool = Field(default=True, description="redact secrets in summaries")
    retention_interval_seconds: float = Field(default=6 * 3600.0, gt=0)
    # auto-injection
    auto_inject_enabled: bool = True
    auto_inject_threshold: float = Field(
        default=0.6, ge=0, le=1, description="episodic summaries: score needed (docs/consolidation.md)"
    )
    auto_inject_max_tokens: int = Field(default=200, ge=0)
    auto_inject_max_items: int = Field(default=5, ge=1)
    auto_inject_document_threshold: float = Field(
        default=0.6, ge=0, le=1, description="memory-file hits: score needed (docs/memory.md)"
    )
    # dreaming
    dreaming_enabled: bool = True
    dreaming_debounce_seconds: float = Field(default=600.0, ge=0)
    dreaming_threshold: int = Field(default=5, ge=1)
    dreaming_batch: int = Field(default=10, ge=1)
    dreaming_dir: str = Field(default="memory/dreams", description="relative to the memory folder")


def settings_of(engine: Any) -> EpisodicSettings:
    """The table; defaults when ``goclaw.episodic`` is disabled but one of its workers is not."""
    return settings_or_defaults(engine, "episodic", EpisodicSettings)


def agent_setting(engine: Any, agent: Any, key: str) -> Any:
    """The agent's own value for ``key`` (``agents.settings``), else the table's."""
    return agent_override(agent, key, getattr(settings_of(engine), key))
