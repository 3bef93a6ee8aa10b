"""The episodic plugin's table (component ``episodic``; migrations in ``migrations/``).

``episodic_summaries``: one summary per finished session run (the L1 tier) with its retrieval
terms (``lex``) and vector. PostgreSQL's ``tsv`` column and GIN index are made by the migration.
``episodic_versions``: a change counter per agent, moved by triggers (migration episodic_0002) on
every change of an agent's summaries that search can see; search reads it to know whether its
in-memory index is current. Never change the table here without adding a revision under ``migrations/``.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import BigInteger, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from goclaw.contracts.columns import (
    DEFAULT_TENANT,
    created_field,
    json_field,
    new_id,
    text_field,
    ts_field,
    vector_field,
)

MIGRATIONS = Path(__file__).parent / "migrations"


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
    session_key: str = text_field()
    summary: str = text_field()
    l0_abstract: str = text_field()
    key_topics: list[str] = json_field([])
    lex: str | None = Field(default=None, sa_type=Text)  # retrieval terms (terms.episode_lex)
    embedding: Any = vector_field()
    embedding_provider: str | None = Field(default=None, max_length=128)
    embedding_model: str | None = Field(default=None, max_length=255)
    embedding_dim: int | None = Field(default=None)
    source_type: str = Field(default="session", max_length=32)  # session | channel | manual | ...
    source_id: str = Field(max_length=512)
    turn_count: int = Field(default=0)
    token_count: int = Field(default=0)
    promoted_at: datetime | None = ts_field(nullable=True)
    created_at: datetime = created_field()
    expires_at: datetime | None = ts_field(nullable=True, index=True)


class EpisodicVersion(SQLModel, table=True):
    """An agent's change counter (no foreign key: the triggers run while an agent's rows are
    deleted with it, and a counter left behind is harmless)."""

    __tablename__ = "episodic_versions"

    agent_id: str = Field(primary_key=True, max_length=64)
    version: int = Field(default=0, sa_type=BigInteger)
