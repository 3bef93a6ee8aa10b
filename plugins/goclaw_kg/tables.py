"""The knowledge graph's tables (component ``kg``; migrations in ``migrations/``).

Temporal entities and relations: a row is current while ``valid_until`` is null,
and uniqueness holds among current rows only; dedup candidates below
the auto-merge threshold wait for review. Never change a table here without adding a revision
under ``migrations/``. ``kg_versions``: a change counter per agent, moved by triggers (migration
kg_0002) on every change of an agent's facts that the ``memory_search`` tier can see; the tier
reads it to know whether its in-memory index is current.

The two "unique while current" indexes are partial (``WHERE valid_until IS NULL``) and exist
only in the migrations: declaring a partial index here takes each dialect's ``*_where`` option,
and naming ``postgresql_where`` makes SQLAlchemy import its PostgreSQL dialect in every process,
SQLite ones included (~20 ms of start-up).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import BigInteger, Index, UniqueConstraint
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


class KGEntity(SQLModel, table=True):
    __tablename__ = "kg_entities"
    __table_args__ = (
        Index("ix_kg_entities_scope", "agent_id", "user_id"),
        # uq_kg_entities_current (agent_id, user_id, normalized_name, entity_type): see the module.
    )

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    tenant_id: str = Field(default=DEFAULT_TENANT, max_length=64)
    agent_id: str = Field(foreign_key="agents.id", max_length=64, ondelete="CASCADE")
    user_id: str = Field(default="", max_length=255)
    name: str = Field(max_length=512)
    normalized_name: str = Field(max_length=512)
    entity_type: str = Field(default="thing", max_length=64)
    description: str = text_field()
    confidence: float = Field(default=1.0)
    properties: dict[str, Any] = json_field({})
    embedding: Any = vector_field()
    embedding_provider: str | None = Field(default=None, max_length=128)
    embedding_model: str | None = Field(default=None, max_length=255)
    embedding_dim: int | None = Field(default=None)
    source_id: str = Field(default="", max_length=512)  # the episodic summary it came from
    merged_into: str | None = Field(default=None, max_length=64)
    valid_from: datetime = created_field()
    valid_until: datetime | None = ts_field(nullable=True)
    created_at: datetime = created_field()
    updated_at: datetime = created_field()


class KGRelation(SQLModel, table=True):
    __tablename__ = "kg_relations"
    __table_args__ = (
        Index("ix_kg_relations_scope", "agent_id", "user_id"),
        # uq_kg_relations_current (agent_id, user_id, source_entity_id, relation_type,
        # target_entity_id): see the module.
    )

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    tenant_id: str = Field(default=DEFAULT_TENANT, max_length=64)
    agent_id: str = Field(foreign_key="agents.id", max_length=64, ondelete="CASCADE")
    user_id: str = Field(default="", max_length=255)
    source_entity_id: str = Field(foreign_key="kg_entities.id", max_length=64)
    target_entity_id: str = Field(foreign_key="kg_entities.id", max_length=64)
    relation_type: str = Field(max_length=128)
    confidence: float = Field(default=1.0)
    properties: dict[str, Any] = json_field({})
    source_id: str = Field(default="", max_length=512)
    valid_from: datetime = created_field()
    valid_until: datetime | None = ts_field(nullable=True)
    created_at: datetime = created_field()


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
    created_at: datetime = created_field()
    reviewed_at: datetime | None = ts_field(nullable=True)


class KGVersion(SQLModel, table=True):
    """An agent's change counter (no foreign key: the triggers run while an agent's rows are
    deleted with it, and a counter left behind is harmless)."""

    __tablename__ = "kg_versions"

    agent_id: str = Field(primary_key=True, max_length=64)
    version: int = Field(default=0, sa_type=BigInteger)
