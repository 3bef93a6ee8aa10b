"""The kernel's tables (DESIGN.md §4): what the kernel's own mechanisms use.

Agents with their links and teams (``engine.agents``), context files (every prompt reads them),
``system_configs`` (tenant settings), the event queue and ``worker_state`` (``engine.events``,
the workers runner) and the embedding cache (the shared retrieval engine). Every feature's
tables live in the plugin that owns them and are created by its own migration chain
(``goclaw_schema`` hook, :mod:`goclaw.contracts.schema`): memory documents and chunks in
``goclaw_memory``, skills and grants in ``goclaw_skills``, and so on.

The same tables serve SQLite and PostgreSQL. Every row is scoped by ``agent_id`` (and
``user_id`` where the spec scopes per user; ``""`` means agent level). Never change a table
here without adding a migration under ``goclaw/store/migrations/versions``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Column, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from goclaw.store.columns import DEFAULT_TENANT, new_id
from goclaw.store.columns import created_field as _created
from goclaw.store.columns import json_field as _json
from goclaw.store.columns import text_field as _text
from goclaw.store.columns import ts_field as _ts
from goclaw.store.columns import vector_field as _vector

__all__ = ["DEFAULT_TENANT", "new_id"]


# --------------------------------------------------------------------------- agents


class Agent(SQLModel, table=True):
    __tablename__ = "agents"
    __table_args__ = (UniqueConstraint("tenant_id", "name", name="uq_agents_tenant_name"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    tenant_id: str = Field(default=DEFAULT_TENANT, max_length=64)
    name: str = Field(max_length=128)
    display_name: str = Field(default="", max_length=255)
    agent_type: str = Field(default="open", max_length=32)  # open | predefined (spec §4)
    status: str = Field(default="active", max_length=32)  # summoning | active (spec §7)
    description: str = _text()
    # The agent's own folder for memory files; relative to the workspace unless absolute.
    workspace_dir: str | None = Field(default=None)
    # Per-agent settings: skill_allow_list (null = all), auto-inject config (spec §17), ...
    settings: dict[str, Any] = _json({})
    created_at: datetime = _created()
    updated_at: datetime = _created()


class AgentContextFile(SQLModel, table=True):
    __tablename__ = "agent_context_files"
    __table_args__ = (UniqueConstraint("agent_id", "file_name", name="uq_agent_context_files"),)

    id: int | None = Field(default=None, primary_key=True)
    agent_id: str = Field(foreign_key="agents.id", max_length=64, ondelete="CASCADE")
    file_name: str = Field(max_length=255)
    content: str = _text()
    updated_at: datetime = _created()


class UserContextFile(SQLModel, table=True):
    __tablename__ = "user_context_files"
    __table_args__ = (UniqueConstraint("agent_id", "user_id", "file_name", name="uq_user_context_files"),)

    id: int | None = Field(default=None, primary_key=True)
    agent_id: str = Field(foreign_key="agents.id", max_length=64, ondelete="CASCADE")
    user_id: str = Field(max_length=255)
    file_name: str = Field(max_length=255)
    content: str = _text()
    updated_at: datetime = _created()


class AgentLink(SQLModel, table=True):
    """Manual delegation links (drive DELEGATION.md, spec §1)."""

    __tablename__ = "agent_links"
    __table_args__ = (UniqueConstraint("source_agent_id", "target_agent_id", name="uq_agent_links"),)

    id: int | None = Field(default=None, primary_key=True)
    source_agent_id: str = Field(foreign_key="agents.id", max_length=64, ondelete="CASCADE")
    target_agent_id: str = Field(foreign_key="agents.id", max_length=64, ondelete="CASCADE")
    description: str = _text()
    created_at: datetime = _created()


class Team(SQLModel, table=True):
    __tablename__ = "teams"
    __table_args__ = (UniqueConstraint("tenant_id", "name", name="uq_teams_tenant_name"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    tenant_id: str = Field(default=DEFAULT_TENANT, max_length=64)
    name: str = Field(max_length=128)
    description: str = _text()
    created_at: datetime = _created()


class TeamMember(SQLModel, table=True):
    __tablename__ = "team_members"

    team_id: str = Field(foreign_key="teams.id", primary_key=True, max_length=64, ondelete="CASCADE")
    agent_id: str = Field(foreign_key="agents.id", primary_key=True, max_length=64, ondelete="CASCADE")
    role: str = Field(default="member", max_length=64)


# --------------------------------------------------------------------------- settings (spec §9.5)


class SystemConfig(SQLModel, table=True):
    """Tenant settings such as ``skills.slash_commands.enabled`` (spec §9.5)."""

    __tablename__ = "system_configs"

    tenant_id: str = Field(default=DEFAULT_TENANT, primary_key=True, max_length=64)
    key: str = Field(primary_key=True, max_length=255)
    value: str = _text()
    updated_at: datetime = _created()


# --------------------------------------------------------------------------- embedding cache


class EmbeddingCache(SQLModel, table=True):
    """Vectors keyed by (text hash, provider, model): unchanged text is never embedded twice."""

    __tablename__ = "embedding_cache"

    chunk_hash: str = Field(primary_key=True, max_length=64)
    provider: str = Field(primary_key=True, max_length=128)
    model: str = Field(primary_key=True, max_length=255)
    dim: int
    embedding: Any = _vector()
    created_at: datetime = _created()


# --------------------------------------------------------------------------- events (DESIGN.md §6)


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


class WorkerState(SQLModel, table=True):
    """Small per-worker, per-scope state (e.g. the dreaming worker's last run per agent/user)."""

    __tablename__ = "worker_state"

    worker: str = Field(primary_key=True, max_length=128)
    scope: str = Field(primary_key=True, max_length=512)
    value: dict[str, Any] = _json({})
    updated_at: datetime = _created()
