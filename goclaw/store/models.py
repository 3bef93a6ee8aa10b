"""The kernel's private tables: the durable event queue (``host.events``, the
workers runner). The tables plugins share with the kernel — agents, links and teams, context
files, ``system_configs``, the embedding cache, ``worker_state`` — are a contract and live in
:mod:`goclaw.contracts.store`; importing this module registers all of them on
``SQLModel.metadata`` (the kernel's migration chain compares against it).

Never change a table here without adding a migration under ``goclaw/store/migrations/versions``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Column, Index, Text
from sqlmodel import Field, SQLModel

from goclaw.contracts.columns import created_field as _created
from goclaw.contracts.columns import json_field as _json
from goclaw.contracts.columns import ts_field as _ts
from goclaw.contracts.store import (
    Agent,
    AgentContextFile,
    AgentLink,
    EmbeddingCache,
    SystemConfig,
    Team,
    TeamMember,
    UserContextFile,
    WorkerState,
)

# --------------------------------------------------------------------------- events


class Event(SQLModel, table=True):
    """The durable outbox: publish is an insert in the caller's transaction."""

    __tablename__ = "events"
    __table_args__ = (Index("ix_events_type_created", "event_type", "created_at"),)

    id: int | None = Field(default=None, primary_key=True)
    event_type: str = Field(max_length=128)
    agent_id: str = Field(default="", max_length=64)
    user_id: str = Field(default="", max_length=255)
    payload: dict[str, Any] = _json({})
    created_at: datetime = _created()


class EventDelivery(SQLModel, table=True):
    """One row per (event, subscribed worker): claimed, retried with backoff, done or dead."""

    __tablename__ = "event_deliveries"
    __table_args__ = (Index("ix_event_deliveries_claim", "status", "available_at"),)

    event_id: int = Field(foreign_key="events.id", primary_key=True, ondelete="CASCADE")
    worker: str = Field(primary_key=True, max_length=128)
    status: str = Field(default="pending", max_length=16)  # pending | processing | done | dead
    attempts: int = Field(default=0)
    available_at: datetime = _created()
    claimed_by: str | None = Field(default=None, max_length=255)
    claimed_at: datetime | None = _ts(nullable=True)
    last_error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    processed_at: datetime | None = _ts(nullable=True)


# Every table the kernel's migration chain creates: the shared ones and the private ones.
KERNEL_TABLES: tuple[type[SQLModel], ...] = (
    Agent,
    AgentContextFile,
    UserContextFile,
    AgentLink,
    Team,
    TeamMember,
    SystemConfig,
    EmbeddingCache,
    WorkerState,
    Event,
    EventDelivery,
)
