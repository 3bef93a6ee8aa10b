"""A from-scratch dreaming worker (replaces ``goclaw.workers.dreaming``; disable that first).

On ``episodic.created`` it lists the scope's unpromoted episodic summaries through the
``episodic`` service. Once ``[plugins.reverie] threshold`` of them have gathered, it writes one
memory, a bullet per summary, through the memory-file writer (``engine.memory.writer``: an
atomic append to the scope's dated memory file, indexed at once, so ``memory search`` finds
it) and marks the summaries promoted. It is idempotent, as a worker must be: the memory carries
the ids it consolidates, so a replay after a crash between the two steps writes nothing twice.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from goclaw import hookimpl
from goclaw.contracts.events import EPISODIC_CREATED
from goclaw.contracts.memory import EpisodicService


class ReverieSettings(BaseModel):
    threshold: int = 3  # unpromoted summaries that make a dream
    batch: int = 20  # at most this many, oldest first


class Reverie:
    name = "reverie"
    event_types = frozenset({EPISODIC_CREATED})

    def handle(self, event: Any, engine: Any) -> None:
        agent_id = str(event.payload.get("agent_id") or event.agent_id)
        user = str(event.payload.get("user_id") or event.user_id or "")
        episodic: EpisodicService = engine.service("episodic")
        settings = engine.plugin_settings("reverie")
        pending = episodic.list(agent_id, user, limit=1000, unpromoted_only=True, exact_user=True)
        if len(pending) < settings.threshold:
            return
        pending = sorted(pending, key=lambda s: (s.created_at, s.id))[: settings.batch]
        ids = sorted(s.id for s in pending)
        writer = engine.memory.writer
        done = [m for m in writer.list(agent_id, user or None, tag="dream") if m.metadata.get("of") == ids]
        if not done:
            bullets = "\n".join(f"- {s.l0_abstract or s.summary[:200]}" for s in pending)
            text = f"Dreamt from {len(ids)} sessions:\n{bullets}"
            writer.add(agent_id, text, user or None, tags=["dream"], metadata={"of": ids})
        episodic.promote(ids)


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    return ReverieSettings


@hookimpl
def goclaw_consolidation_workers() -> list[Any]:
    return [Reverie()]
