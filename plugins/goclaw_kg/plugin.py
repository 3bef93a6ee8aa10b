"""Plugin ``goclaw.kg``: the temporal knowledge graph (spec §18, §20).

Provides the ``kg`` service (``engine.kg``). Its workers are separate default plugins in this
package (``goclaw.workers.semantic`` extracts facts from each new episodic summary,
``goclaw.workers.dedup`` merges duplicate entities) so each can be disabled or replaced.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from goclaw import hookimpl
from goclaw_kg.graph import KnowledgeGraph
from goclaw_kg.settings import KGSettings


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    return KGSettings


@hookimpl
def goclaw_services(engine: Any) -> dict[str, Any]:
    return {"kg": KnowledgeGraph(engine)}
