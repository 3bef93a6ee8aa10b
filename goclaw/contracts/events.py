"""Event contracts: the queue, the event names and their payloads (spec §18, issue 13 item 1).

The queue is the kernel's (:class:`goclaw.events.EventQueue`, ``engine.events``) and exists
whatever plugins are disabled, so a publisher never asks whether it is there. A worker is any
object with ``name``, ``event_types`` and ``handle(event, engine)`` contributed through
``goclaw_consolidation_workers``; it receives a :class:`QueuedEvent` whose ``payload`` has the
shape named below for its ``event_type``. Handlers must be idempotent (a retry or replay
delivers the same event again).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, runtime_checkable

from goclaw.events import DeferEvent, QueuedEvent

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from goclaw.engine import Engine

#: A session run ended (``engine.sessions.end``, ``goclaw session end``): starts the pipeline.
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


@runtime_checkable
class EventPublisher(Protocol):
    """``engine.events``: publish into the durable queue and see who listens."""

    def publish(
        self,
        session: Session,
        event_type: str,
        payload: Mapping[str, Any],
        agent_id: str = "",
        user_id: str = "",
    ) -> int:
        """Insert the event and one delivery per subscribed worker in ``session``'s transaction."""
        ...

    def publish_now(
        self, event_type: str, payload: Mapping[str, Any], agent_id: str = "", user_id: str = ""
    ) -> int:
        """Publish in a transaction of its own."""
        ...

    def subscribers(self, event_type: str) -> list[str]:
        """Names of the workers subscribed to ``event_type``, sorted."""
        ...


@runtime_checkable
class ConsolidationWorker(Protocol):
    """A worker subscribed to event types (``goclaw_consolidation_workers``). ``handle`` raises
    :class:`DeferEvent` to be called again later without it counting as a failure. Optional:
    ``tick_interval`` (seconds or ``callable(engine)``) and ``tick(engine)`` for periodic jobs."""

    name: str
    event_types: frozenset[str]

    def handle(self, event: QueuedEvent, engine: Engine) -> None: ...


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
