"""skills: the managed skill store and grants, created or adopted

Revision ID: skills_0001
Revises:
Create Date: 2026-12-03 06:30:00

``skills``, ``skill_versions``, ``skill_agent_grants`` and ``skill_user_grants`` as the kernel's
chain created them up to its 0004. A database made by an older goclaw, whose kernel chain owned
these tables, already has them, with rows: they are adopted as they are. Otherwise they are
created.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

import goclaw.contracts.columns

revision = "skills_0001"
down_revision = None
branch_labels = None
depends_on = None

AutoString = sqlmodel.sql.sqltypes.AutoString
UTC = goclaw.contracts.columns.UTCDateTime


def _skills() -> None:
    op.create_table(
        "skills",
        sa.Column("id", AutoString(length=64), nullable=False),
        sa.Column("tenant_id", AutoString(length=64), nullable=False),
        sa.Column("slug", AutoString(length=128), nullable=False),
        sa.Column("name", AutoString(length=255), nullable=False),
        sa.Column("description", sa.Text(), server_default="", nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("owner_id", AutoString(length=255), nullable=False),
        sa.Column("visibility", AutoString(length=16), nullable=False),
        sa.Column("status", AutoString(length=16), nullable=False),
        sa.Column("content", sa.Text(), server_default="", nullable=False),
        sa.Column("frontmatter", sa.JSON(), nullable=False),
        sa.Column("content_hash", AutoString(length=64), nullable=False),
        sa.Column("created_at", UTC(timezone=True), nullable=False),
        sa.Column("updated_at", UTC(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant_id", "slug", name="uq_skills_tenant_slug"),
    )


def _versions() -> None:
    op.create_table(
        "skill_versions",
        sa.Column("skill_id", AutoString(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("content", sa.Text(), server_default="", nullable=False),
        sa.Column("frontmatter", sa.JSON(), nullable=False),
        sa.Column("content_hash", AutoString(length=64), nullable=False),
        sa.Column("created_at", UTC(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["skill_id"], ["skills.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("skill_id", "version"),
    )


def _agent_grants() -> None:
    op.create_table(
        "skill_agent_grants",
        sa.Column("skill_id", AutoString(length=64), nullable=False),
        sa.Column("agent_id", AutoString(length=64), nullable=False),
        sa.Column("pinned_version", sa.Integer(), nullable=True),
        sa.Column("granted_by", AutoString(length=255), nullable=False),
        sa.Column("created_at", UTC(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["skill_id"], ["skills.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("skill_id", "agent_id"),
    )


def _user_grants() -> None:
    op.create_table(
        "skill_user_grants",
        sa.Column("skill_id", AutoString(length=64), nullable=False),
        sa.Column("user_id", AutoString(length=255), nullable=False),
        sa.Column("granted_by", AutoString(length=255), nullable=False),
        sa.Column("created_at", UTC(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["skill_id"], ["skills.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("skill_id", "user_id"),
    )


TABLES = {
    "skills": _skills,
    "skill_versions": _versions,
    "skill_agent_grants": _agent_grants,
    "skill_user_grants": _user_grants,
}


def upgrade() -> None:
    existing = sa.inspect(op.get_bind())
    for name, create in TABLES.items():  # parents first
        if not existing.has_table(name, existing.default_schema_name):
            create()


def downgrade() -> None:
    for name in reversed(TABLES):
        op.drop_table(name)
