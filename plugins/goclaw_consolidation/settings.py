"""``[plugins.consolidation]``: the V3 memory settings with the spec's defaults (spec §17-§18).

Per-agent overrides live in ``agents.settings`` under the spec's keys (``auto_inject_enabled``,
``auto_inject_threshold``, ``auto_inject_max_tokens``, ``episodic_ttl_days``,
``consolidation_enabled``); :func:`agent_setting` reads them with this table as the default.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ConsolidationSettings(BaseModel):
    """``[plugins.consolidation]``"""

    # The queue's knobs live in the kernel's [events] table (issue 13 item 2).
    llm_timeout_seconds: float = Field(default=30.0, gt=0)
    # episodic (spec §17, §19)
    consolidation_enabled: bool = True
    episodic_ttl_days: int = Field(default=90, ge=0, description="0 = never expires")
    redact: bool = Field(default=True, description="redact secrets in summaries and KG facts")
    retention_interval_seconds: float = Field(default=6 * 3600.0, gt=0)
    # auto-injection (spec §17)
    auto_inject_enabled: bool = True
    auto_inject_threshold: float = Field(default=0.3, ge=0, le=1)
    auto_inject_max_tokens: int = Field(default=200, ge=0)
    auto_inject_max_items: int = Field(default=5, ge=1)
    auto_inject_document_threshold: float = Field(
        default=0.8, ge=0, description="memory-file hits: fused score needed (docs/memory.md)"
    )
    # dedup (spec §18): safe by default; see docs/consolidation.md
    dedup_auto_merge_cosine: float = Field(default=0.95, ge=0, le=1)
    dedup_auto_merge_name: float = Field(default=0.985, ge=0, le=1)
    dedup_candidate_cosine: float = Field(default=0.85, ge=0, le=1)
    dedup_candidate_name: float = Field(default=0.90, ge=0, le=1)
    # dreaming (DECISIONS.md)
    dreaming_enabled: bool = True
    dreaming_debounce_seconds: float = Field(default=600.0, ge=0)
    dreaming_threshold: int = Field(default=5, ge=1)
    dreaming_batch: int = Field(default=10, ge=1)
    dreaming_dir: str = Field(default="memory/dreams", description="relative to the memory folder")
    # semantic (spec §20): a new current relation of one of these types replaces the old one
    exclusive_relation_types: list[str] = Field(
        default_factory=lambda: ["works_at", "lives_in", "reports_to", "located_in"]
    )


AGENT_KEYS = (
    "auto_inject_enabled",
    "auto_inject_threshold",
    "auto_inject_max_tokens",
    "episodic_ttl_days",
    "consolidation_enabled",
)


def settings_of(engine: Any) -> ConsolidationSettings:
    try:
        cfg = engine.plugin_settings("consolidation")
    except Exception:  # plugin disabled but a worker plugin still active: defaults
        return ConsolidationSettings()
    return cfg if isinstance(cfg, ConsolidationSettings) else ConsolidationSettings()


def agent_setting(engine: Any, agent: Any, key: str) -> Any:
    """The agent's own value for ``key`` (``agents.settings``), else the plugin default."""
    value = (getattr(agent, "settings", None) or {}).get(key)
    default = getattr(settings_of(engine), key)
    if value is None:
        return default
    if isinstance(default, bool):
        if isinstance(value, str):
            return value.strip().lower() in {"1", "true", "yes", "on"}
        return bool(value)
    try:
        return type(default)(value)
    except (TypeError, ValueError):
        return default
