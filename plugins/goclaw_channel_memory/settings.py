"""``[plugins.channel_memory]``: passive channel memory. Per-channel opt-in, exclusions
and auto-approval live in ``agents.settings["passive_memory"]`` (``goclaw channel-memory``).
The deprecated ``[plugins.consolidation]`` table still works (its keys are routed here, with a
warning)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from goclaw.contracts.host import settings_or_defaults


class ChannelMemorySettings(BaseModel):
    """``[plugins.channel_memory]``"""

    llm_timeout_seconds: float = Field(default=30.0, gt=0)


def settings_of(engine: Any) -> ChannelMemorySettings:
    """The table; defaults when ``goclaw.channel_memory`` is disabled but one of its workers is not."""
    return settings_or_defaults(engine, "channel_memory", ChannelMemorySettings)
