"""The kernel's tables that plugins read and write, and the database handle they use them
through (``host.db``, :class:`Database`).

Agents with their links and teams (``host.agents``), context files (every prompt reads them),
``system_configs`` (tenant settings such as the slash-command switch), the embedding cache
(vectors keyed by text hash, provider and model) and ``worker_state`` (small per-worker state)
are created by the kernel's migration chain (``goclaw/store/migrations``) and shared: a plugin
queries them with these classes, never through the kernel's modules. Every feature's own tables
live in the plugin that owns them (:mod:`goclaw.contracts.schema`).

The same tables serve SQLite and PostgreSQL. Every row is scoped by ``agent_id`` (and
``user_id`` for per-user data; ``""`` means agent level). Never change a table here without
adding a migration under ``goclaw/store/migrations/versions``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

from goclaw.contracts.columns import DEFAULT_TENANT, new_id
from goclaw.contracts.columns import created_field as _created
from goclaw.contracts.columns import json_field as _json
from goclaw.contracts.columns import text_field as _text
from goclaw.contracts.columns import vector_field as _vector

if TYPE_CHECKING:
    from sqlalchemy import Engine as SAEngine
    from sqlmodel import Session

T = TypeVar("T")

__all__ = [
    "Agent",
    "AgentContextFile",
    "AgentLink",
    "Database",
    "EmbeddingCache",
    "SystemConfig",
    "Team",
    "TeamMember",
    "UserContextFile",
    "WorkerState",
]


# --------------------------------------------------------------------------- the database handle


class Database(Protocol):
    """``host.db``: the workspace database (SQLite or PostgreSQL) and its transactions."""

    @property
    def backend(self) -> Literal["sqlite", "postgresql"]:
        """Which database this is; SQL that differs between the two branches on it."""
        ...

    @property
    def engine(self) -> SAEngine:
        """The SQLAlchemy engine (for Core statements and raw connections)."""
        ...

    def session(self) -> AbstractContextManager[Session]:
        """A read session. Anything written is rolled back unless committed explicitly."""
        ...

    def write(self) -> AbstractContextManager[Session]:
        """A read-write transaction: committed when the block ends, rolled back on error."""
        ...

    def run_write(self, fn: Callable[[Session], T], *, attempts: int = 8) -> T:
        """Run ``fn`` in a write transaction, re-running the whole transaction while SQLite
        reports the database locked (so that error never reaches a user)."""
        ...


# --------------------------------------------------------------------------- agents


class Agent(SQLModel, table=True):
    __tablename__ = "agents"
    __table_args__ = (UniqueConstraint("tenant_id", "name", name="uq_agents_tenant_name"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    tenant_id: str = Field(default=DEFAULT_TENANT, max_length=64)
    name: str = Field(max_length=128)
    display_name: str = Field(default="", max_length=255)
    agent_type: str = Field(default="open", max_length=32)  # open | predefined
    status: str = Field(default="active", max_length=32)  # summoning | active
    description: str = _text()
    # The agent's own folder for memory files; relative to the workspace unless absolute.
    workspace_dir: str | None = Field(default=None)
    # Per-agent settings: skill_allow_list (null = all), auto-inject config, ...
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
    """Manual delegation links (drive DELEGATION.md)."""

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


# --------------------------------------------------------------------------- settings


class SystemConfig(SQLModel, table=True):
    """Tenant settings such as ``skills.slash_commands.enabled``."""

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


class WorkerState(SQLModel, table=True):
    """Small per-worker, per-scope state (e.g. the dreaming worker's last run per agent/user)."""

    __tablename__ = "worker_state"

    worker: str = Field(primary_key=True, max_length=128)
    scope: str = Field(primary_key=True, max_length=512)
    value: dict[str, Any] = _json({})
    updated_at: datetime = _created()
