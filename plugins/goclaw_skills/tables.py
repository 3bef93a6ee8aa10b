"""The skills plugin's tables (component ``skills``; migrations in ``migrations/``).

The managed skill store (tier 4): ``skills`` with their ``skill_versions``, and
the grants that give agents and users access. Never change a table here without
adding a revision under ``migrations/``.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

from goclaw.contracts.columns import DEFAULT_TENANT, created_field, json_field, new_id, text_field

MIGRATIONS = Path(__file__).parent / "migrations"


class Skill(SQLModel, table=True):
    """A skill in the managed store (tier 4); grants apply to these."""

    __tablename__ = "skills"
    __table_args__ = (UniqueConstraint("tenant_id", "slug", name="uq_skills_tenant_slug"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    tenant_id: str = Field(default=DEFAULT_TENANT, max_length=64)
    slug: str = Field(max_length=128)
    name: str = Field(default="", max_length=255)
    description: str = text_field()
    version: int = Field(default=1)
    owner_id: str = Field(default="", max_length=255)
    visibility: str = Field(default="private", max_length=16)  # private | internal | public
    status: str = Field(default="active", max_length=16)  # active | archived
    content: str = text_field()  # the current SKILL.md
    frontmatter: dict[str, Any] = json_field({})
    content_hash: str = Field(default="", max_length=64)
    created_at: datetime = created_field()
    updated_at: datetime = created_field()


class SkillVersion(SQLModel, table=True):
    __tablename__ = "skill_versions"

    skill_id: str = Field(foreign_key="skills.id", primary_key=True, max_length=64, ondelete="CASCADE")
    version: int = Field(primary_key=True)
    content: str = text_field()
    frontmatter: dict[str, Any] = json_field({})
    content_hash: str = Field(default="", max_length=64)
    created_at: datetime = created_field()


class SkillAgentGrant(SQLModel, table=True):
    __tablename__ = "skill_agent_grants"

    skill_id: str = Field(foreign_key="skills.id", primary_key=True, max_length=64, ondelete="CASCADE")
    agent_id: str = Field(foreign_key="agents.id", primary_key=True, max_length=64, ondelete="CASCADE")
    pinned_version: int | None = Field(default=None)
    granted_by: str = Field(default="", max_length=255)
    created_at: datetime = created_field()


class SkillUserGrant(SQLModel, table=True):
    __tablename__ = "skill_user_grants"

    skill_id: str = Field(foreign_key="skills.id", primary_key=True, max_length=64, ondelete="CASCADE")
    user_id: str = Field(primary_key=True, max_length=255)
    granted_by: str = Field(default="", max_length=255)
    created_at: datetime = created_field()
