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

from sqlalchemy import Column, Index, Text, UniqueConstraint, text
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


# --------------------------------------------------------------------------- sessions (spec §16-§17)


class Session(SQLModel, table=True):
    __tablename__ = "sessions"

    key: str = Field(primary_key=True, max_length=512)
    agent_id: str = Field(foreign_key="agents.id", max_length=64, ondelete="CASCADE")
    user_id: str = Field(default="", max_length=255)
    status: str = Field(default="open", max_length=16)  # open | ended
    compaction_count: int = Field(default=0)
    flushed_cycle: int = Field(default=-1)  # compaction cycle whose memory flush already ran
    summary: str = _text()  # the latest compaction summary
    created_at: datetime = _created()
    updated_at: datetime = _created()


class SessionMessage(SQLModel, table=True):
    __tablename__ = "session_messages"
    __table_args__ = (UniqueConstraint("session_key", "seq", name="uq_session_messages_seq"),)

    id: int | None = Field(default=None, primary_key=True)
    session_key: str = Field(foreign_key="sessions.key", max_length=512, ondelete="CASCADE")
    seq: int
    role: str = Field(max_length=32)
    content: str = _text()
    token_count: int = Field(default=0)
    compacted: bool = Field(default=False)
    created_at: datetime = _created()


# --------------------------------------------------------------------------- V3 memory (spec §17-§20)


class EpisodicSummary(SQLModel, table=True):
    __tablename__ = "episodic_summaries"
    __table_args__ = (
        UniqueConstraint("agent_id", "user_id", "source_id", name="uq_episodic_source"),
        Index("ix_episodic_scope", "agent_id", "user_id"),
    )

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    tenant_id: str = Field(default=DEFAULT_TENANT, max_length=64)
    agent_id: str = Field(foreign_key="agents.id", max_length=64, ondelete="CASCADE")
    user_id: str = Field(default="", max_length=255)
    session_key: str = _text()
    summary: str = _text()
    l0_abstract: str = _text()
    key_topics: list[str] = _json([])
    lex: str | None = Field(default=None, sa_type=Text)  # retrieval terms (issue 11, migration 0004)
    embedding: Any = _vector()
    embedding_provider: str | None = Field(default=None, max_length=128)
    embedding_model: str | None = Field(default=None, max_length=255)
    embedding_dim: int | None = Field(default=None)
    source_type: str = Field(default="session", max_length=32)  # session | channel | manual | ...
    source_id: str = Field(max_length=512)
    turn_count: int = Field(default=0)
    token_count: int = Field(default=0)
    promoted_at: datetime | None = _ts(nullable=True)
    created_at: datetime = _created()
    expires_at: datetime | None = _ts(nullable=True, index=True)


class KGEntity(SQLModel, table=True):
    __tablename__ = "kg_entities"
    __table_args__ = (
        Index("ix_kg_entities_scope", "agent_id", "user_id"),
        # Uniqueness holds among current rows only (DECISIONS.md, KG validity).
        Index(
            "uq_kg_entities_current",
            "agent_id",
            "user_id",
            "normalized_name",
            "entity_type",
            unique=True,
            sqlite_where=text("valid_until IS NULL"),
            postgresql_where=text("valid_until IS NULL"),
        ),
    )

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    tenant_id: str = Field(default=DEFAULT_TENANT, max_length=64)
    agent_id: str = Field(foreign_key="agents.id", max_length=64, ondelete="CASCADE")
    user_id: str = Field(default="", max_length=255)
    name: str = Field(max_length=512)
    normalized_name: str = Field(max_length=512)
    entity_type: str = Field(default="thing", max_length=64)
    description: str = _text()
    confidence: float = Field(default=1.0)
    properties: dict[str, Any] = _json({})
    embedding: Any = _vector()
    embedding_provider: str | None = Field(default=None, max_length=128)
    embedding_model: str | None = Field(default=None, max_length=255)
    embedding_dim: int | None = Field(default=None)
    source_id: str = Field(default="", max_length=512)  # the episodic summary it came from
    merged_into: str | None = Field(default=None, max_length=64)
    valid_from: datetime = _created()
    valid_until: datetime | None = _ts(nullable=True)
    created_at: datetime = _created()
    updated_at: datetime = _created()


class KGRelation(SQLModel, table=True):
    __tablename__ = "kg_relations"
    __table_args__ = (
        Index("ix_kg_relations_scope", "agent_id", "user_id"),
        Index(
            "uq_kg_relations_current",
            "agent_id",
            "user_id",
            "source_entity_id",
            "relation_type",
            "target_entity_id",
            unique=True,
            sqlite_where=text("valid_until IS NULL"),
            postgresql_where=text("valid_until IS NULL"),
        ),
    )

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    tenant_id: str = Field(default=DEFAULT_TENANT, max_length=64)
    agent_id: str = Field(foreign_key="agents.id", max_length=64, ondelete="CASCADE")
    user_id: str = Field(default="", max_length=255)
    source_entity_id: str = Field(foreign_key="kg_entities.id", max_length=64)
    target_entity_id: str = Field(foreign_key="kg_entities.id", max_length=64)
    relation_type: str = Field(max_length=128)
    confidence: float = Field(default=1.0)
    properties: dict[str, Any] = _json({})
    source_id: str = Field(default="", max_length=512)
    valid_from: datetime = _created()
    valid_until: datetime | None = _ts(nullable=True)
    created_at: datetime = _created()


class KGDedupCandidate(SQLModel, table=True):
    """Near-duplicate entities below the auto-merge threshold, kept for review."""

    __tablename__ = "kg_dedup_candidates"
    __table_args__ = (UniqueConstraint("entity_a_id", "entity_b_id", name="uq_kg_dedup_pair"),)

    id: int | None = Field(default=None, primary_key=True)
    agent_id: str = Field(max_length=64)
    user_id: str = Field(default="", max_length=255)
    entity_a_id: str = Field(max_length=64)
    entity_b_id: str = Field(max_length=64)
    cosine: float
    name_similarity: float
    status: str = Field(default="pending", max_length=16)  # pending | merged | rejected
    created_at: datetime = _created()
    reviewed_at: datetime | None = _ts(nullable=True)


class ChannelMemoryItem(SQLModel, table=True):
    """Passive channel memory candidates, redacted, awaiting review (spec §18)."""

    __tablename__ = "channel_memory_extraction_items"
    __table_args__ = (Index("ix_channel_memory_scope", "agent_id", "channel"),)

    id: int | None = Field(default=None, primary_key=True)
    agent_id: str = Field(foreign_key="agents.id", max_length=64, ondelete="CASCADE")
    channel: str = Field(max_length=255)
    user_id: str = Field(default="", max_length=255)
    content: str = _text()
    status: str = Field(default="pending", max_length=16)  # pending | approved | rejected
    episodic_id: str | None = Field(default=None, max_length=64)
    created_at: datetime = _created()
    reviewed_at: datetime | None = _ts(nullable=True)


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
