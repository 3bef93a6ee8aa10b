"""The schema: one SQLModel table per entity the spec names (DESIGN.md §4).

The same tables serve SQLite and PostgreSQL. Backend-specific search structures (SQLite FTS5
tables, PostgreSQL generated ``tsvector`` columns, GIN and HNSW indexes) are created by the
migrations, not here. Every row is scoped by ``agent_id`` (and ``user_id`` where the spec
scopes per user; ``""`` means agent level). Never change a table here without adding a
migration under ``goclaw/store/migrations/versions``.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, Text, UniqueConstraint, text
from sqlmodel import Field, SQLModel

from goclaw.store.types import UTCDateTime, Vector, utcnow

DEFAULT_TENANT = "default"


def new_id() -> str:
    return uuid.uuid4().hex


def _ts(nullable: bool = False, index: bool = False) -> Any:
    return Field(
        default=None,
        sa_type=UTCDateTime,
        nullable=nullable,
        index=index,
    )


def _created() -> Any:
    return Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)


def _json(default: Any) -> Any:
    factory = (lambda: dict(default)) if isinstance(default, dict) else (lambda: list(default))
    return Field(default_factory=factory, sa_column=Column(JSON, nullable=False))


def _vector() -> Any:
    return Field(default=None, sa_column=Column(Vector(), nullable=True))


def _text(default: str = "") -> Any:
    return Field(default=default, sa_column=Column(Text, nullable=False, server_default=default))


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


# --------------------------------------------------------------------------- skills (spec §8-§12)


class Skill(SQLModel, table=True):
    """A skill in the managed store (tier 4); grants apply to these (spec §12)."""

    __tablename__ = "skills"
    __table_args__ = (UniqueConstraint("tenant_id", "slug", name="uq_skills_tenant_slug"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    tenant_id: str = Field(default=DEFAULT_TENANT, max_length=64)
    slug: str = Field(max_length=128)
    name: str = Field(default="", max_length=255)
    description: str = _text()
    version: int = Field(default=1)
    owner_id: str = Field(default="", max_length=255)
    visibility: str = Field(default="private", max_length=16)  # private | internal | public
    status: str = Field(default="active", max_length=16)  # active | archived
    content: str = _text()  # the current SKILL.md
    frontmatter: dict[str, Any] = _json({})
    content_hash: str = Field(default="", max_length=64)
    created_at: datetime = _created()
    updated_at: datetime = _created()


class SkillVersion(SQLModel, table=True):
    __tablename__ = "skill_versions"

    skill_id: str = Field(foreign_key="skills.id", primary_key=True, max_length=64, ondelete="CASCADE")
    version: int = Field(primary_key=True)
    content: str = _text()
    frontmatter: dict[str, Any] = _json({})
    content_hash: str = Field(default="", max_length=64)
    created_at: datetime = _created()


class SkillAgentGrant(SQLModel, table=True):
    __tablename__ = "skill_agent_grants"

    skill_id: str = Field(foreign_key="skills.id", primary_key=True, max_length=64, ondelete="CASCADE")
    agent_id: str = Field(foreign_key="agents.id", primary_key=True, max_length=64, ondelete="CASCADE")
    pinned_version: int | None = Field(default=None)
    granted_by: str = Field(default="", max_length=255)
    created_at: datetime = _created()


class SkillUserGrant(SQLModel, table=True):
    __tablename__ = "skill_user_grants"

    skill_id: str = Field(foreign_key="skills.id", primary_key=True, max_length=64, ondelete="CASCADE")
    user_id: str = Field(primary_key=True, max_length=255)
    granted_by: str = Field(default="", max_length=255)
    created_at: datetime = _created()


class SystemConfig(SQLModel, table=True):
    """Tenant settings such as ``skills.slash_commands.enabled`` (spec §9.5)."""

    __tablename__ = "system_configs"

    tenant_id: str = Field(default=DEFAULT_TENANT, primary_key=True, max_length=64)
    key: str = Field(primary_key=True, max_length=255)
    value: str = _text()
    updated_at: datetime = _created()


# --------------------------------------------------------------------------- memory (spec §14-§16)


class MemoryDocument(SQLModel, table=True):
    __tablename__ = "memory_documents"
    __table_args__ = (UniqueConstraint("agent_id", "user_id", "path", name="uq_memory_documents"),)

    id: int | None = Field(default=None, primary_key=True)
    agent_id: str = Field(foreign_key="agents.id", max_length=64, ondelete="CASCADE")
    user_id: str = Field(default="", max_length=255)  # "" = agent-level memory
    path: str = Field(max_length=1024)  # relative to the agent folder, POSIX separators
    content_hash: str = Field(max_length=64)
    size: int = Field(default=0)
    mtime: float = Field(default=0.0)
    chunk_count: int = Field(default=0)
    indexed_at: datetime = _created()


class MemoryChunk(SQLModel, table=True):
    __tablename__ = "memory_chunks"
    __table_args__ = (
        Index("ix_memory_chunks_scope", "agent_id", "user_id"),
        Index("ix_memory_chunks_document", "document_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    document_id: int = Field(foreign_key="memory_documents.id", ondelete="CASCADE")
    agent_id: str = Field(max_length=64)
    user_id: str = Field(default="", max_length=255)
    path: str = Field(max_length=1024)
    start_line: int
    end_line: int
    text: str = _text()
    # The retrieval engine's terms of ``text`` (goclaw.retrieval.tokenize), space-separated:
    # the in-memory BM25 index is rebuilt from them and PostgreSQL's tsv is generated from them.
    lex: str | None = Field(default=None, sa_type=Text)
    chunk_hash: str = Field(max_length=64)
    embedding: Any = _vector()
    embedding_provider: str | None = Field(default=None, max_length=128)
    embedding_model: str | None = Field(default=None, max_length=255)
    embedding_dim: int | None = Field(default=None)


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
