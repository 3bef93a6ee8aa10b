"""Plugin ``goclaw.channel_memory``: passive channel memory.

Provides the ``channel_memory`` service and owns its table (component ``channel_memory``,
:mod:`goclaw_channel_memory.tables`). An approved item becomes an episodic summary through
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
def goclaw_schema() -> list[Any]:
    from goclaw.contracts.schema import SchemaComponent
    from goclaw_channel_memory.tables import MIGRATIONS, ChannelMemoryItem

    return [
        SchemaComponent("channel_memory", (ChannelMemoryItem,), MIGRATIONS, "passive channel memory items")
    ]


@hookimpl
def goclaw_forget_rows(engine: Any, scope: Any, connection: Any) -> list[Any]:
    """The scope's channel-memory items."""
    from goclaw.contracts.schema import ForgetStep
    from goclaw_channel_memory.tables import ChannelMemoryItem

    return [ForgetStep(t, scope.clause(t)) for t in (ChannelMemoryItem,)]


@hookimpl
def goclaw_services(engine: Any) -> dict[str, Any]:
    return {"channel_memory": ChannelMemory(engine)}
