"""An example third-party consolidation worker, installed through the ``goclaw`` entry point.

It subscribes to ``run.completed`` through ``goclaw_consolidation_workers`` and appends each
event it receives, as one JSON line, to the file named by ``[plugins.listener] out`` (relative
to the workspace). It needs no built-in plugin: the event queue is the kernel's.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from goclaw import hookimpl


class ListenerSettings(BaseModel):
    out: str = "listener.jsonl"


class RunListener:
    name = "listener.runs"
    event_types = frozenset({"run.completed"})

    def handle(self, event: Any, engine: Any) -> None:
        path = engine.workspace / engine.plugin_settings("listener").out
        line = {"type": event.event_type, "agent_id": event.agent_id, "payload": dict(event.payload)}
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    return ListenerSettings


@hookimpl
def goclaw_consolidation_workers() -> list[Any]:
    return [RunListener()]
