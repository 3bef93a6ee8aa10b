"""Plugin ``goclaw.channel_memory``: passive channel memory (spec §18).

Provides the ``channel_memory`` service. An approved item becomes an episodic summary through
the ``episodic`` service (``source_type='channel'``), so it needs ``goclaw.episodic`` on.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from goclaw import hookimpl
from goclaw_channel_memory.service import ChannelMemory
from goclaw_channel_memory.settings import ChannelMemorySettings


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    return ChannelMemorySettings


@hookimpl
def goclaw_services(engine: Any) -> dict[str, Any]:
    return {"channel_memory": ChannelMemory(engine)}
