"""Event contracts: the queue, the event names and their payloads.

The queue is the kernel's (``host.events``, an :class:`EventPublisher`) and exists whatever
plugins are disabled, so a publisher never asks whether it is there. A worker is any object with
``name``, ``event_types`` and ``handle(event, engine)`` contributed through
``goclaw_consolidation_workers`` (a :class:`ConsolidationWorker`); it receives a
:class:`QueuedEvent` whose ``payload`` has the shape named below for its ``event_type``.
Handlers must be idempotent (a retry or replay delivers the same event again).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypedDict, runtime_checkable

from goclaw.contracts.host import EventPublisher, Host

#: A session run ended (``host.service("sessions").end``, ``goclaw session end``): starts the pipeline.
RUN_COMPLETED = "run.completed"
#: An episodic summary was stored (episodic worker, channel-memory approval).
EPISODIC_CREATED = "episodic.created"
#: Knowledge-graph entities were created or updated (semantic worker).
ENTITY_UPSERTED = "entity.upserted"


class RunCompletedPayload(TypedDict):
    """``run.completed``. ``summary`` is the compaction summary only when this run compacted."""

    session_key: str
    compaction_count: int
    agent_id: str
    user_id: str
    summary: str
    run: int
    first_seq: int
    last_seq: int


class EpisodicCreatedPayload(TypedDict, total=False):
    """``episodic.created``."""

    episodic_id: str
    agent_id: str
    user_id: str
    session_key: str
    source_id: str
    source_type: str


class EntityUpsertedPayload(TypedDict):
    """``entity.upserted``."""

    entity_ids: list[str]
    episodic_id: str
    agent_id: str
    user_id: str


PAYLOADS: dict[str, type] = {
    RUN_COMPLETED: RunCompletedPayload,
    EPISODIC_CREATED: EpisodicCreatedPayload,
    ENTITY_UPSERTED: EntityUpsertedPayload,
}


class DeferEvent(Exception):
    """Raised by a handler to be called again after ``delay`` seconds (not a failure)."""

    def __init__(self, delay: float, reason: str = "") -> None:
        super().__init__(reason or f"deferred for {delay:.0f}s")
        self.delay = max(0.0, float(delay))


@dataclass(frozen=True)
class QueuedEvent:
    """What a worker's ``handle`` receives: the event plus this delivery's bookkeeping."""

    id: int
    event_type: str
    agent_id: str
    user_id: str
    payload: Mapping[str, Any]
    created_at: datetime
    worker: str = ""
    attempts: int = 0
    claimed_by: str = ""


@runtime_checkable
class ConsolidationWorker(Protocol):
    """A worker subscribed to event types (``goclaw_consolidation_workers``). ``handle`` raises
    :class:`DeferEvent` to be called again later without it counting as a failure. Optional:
    ``tick_interval`` (seconds or ``callable(engine)``) and ``tick(engine)`` for periodic jobs."""

    name: str
    event_types: frozenset[str]

    def handle(self, event: QueuedEvent, engine: Host) -> None: ...


__all__ = [
    "ENTITY_UPSERTED",
    "EPISODIC_CREATED",
    "PAYLOADS",
    "RUN_COMPLETED",
    "ConsolidationWorker",
    "DeferEvent",
    "EntityUpsertedPayload",
    "EpisodicCreatedPayload",
    "EventPublisher",
    "QueuedEvent",
    "RunCompletedPayload",
]
