"""kg: the knowledge-graph tables, created or adopted

Revision ID: kg_0001
Revises:
Create Date: 2026-12-03 07:00:00

``kg_entities``, ``kg_relations`` and ``kg_dedup_candidates`` as the kernel's chain created them
up to its 0005. A database made by an older goclaw, whose kernel chain owned these tables,
already has them, with rows: they are adopted as they are. Otherwise (a new database, or one
made while the plugin was disabled) they are created.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

import goclaw.contracts.columns

revision = "kg_0001"
down_revision = None
branch_labels = None
depends_on = None


def _create_kg_entities() -> None:
    op.create_table(
        "kg_entities",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("tenant_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("user_id", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=512), nullable=False),
        sa.Column("normalized_name", sqlmodel.sql.sqltypes.AutoString(length=512), nullable=False),
        sa.Column("entity_type", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("description", sa.Text(), server_default="", nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=False),
        sa.Column("embedding", goclaw.contracts.columns.Vector(), nullable=True),
        sa.Column("embedding_provider", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=True),
        sa.Column("embedding_model", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
        sa.Column("embedding_dim", sa.Integer(), nullable=True),
        sa.Column("source_id", sqlmodel.sql.sqltypes.AutoString(length=512), nullable=False),
        sa.Column("merged_into", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("valid_from", goclaw.contracts.columns.UTCDateTime(timezone=True), nullable=False),
        sa.Column("valid_until", goclaw.contracts.columns.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", goclaw.contracts.columns.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", goclaw.contracts.columns.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("kg_entities", schema=None) as batch_op:
        batch_op.create_index("ix_kg_entities_scope", ["agent_id", "user_id"], unique=False)
        batch_op.create_index(
            "uq_kg_entities_current",
            ["agent_id", "user_id", "normalized_name", "entity_type"],
            unique=True,
            sqlite_where=sa.text("valid_until IS NULL"),
            postgresql_where=sa.text("valid_until IS NULL"),
        )


def _create_kg_relations() -> None:
    op.create_table(
        "kg_relations",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("tenant_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("user_id", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("source_entity_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("target_entity_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("relation_type", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=False),
        sa.Column("source_id", sqlmodel.sql.sqltypes.AutoString(length=512), nullable=False),
        sa.Column("valid_from", goclaw.contracts.columns.UTCDateTime(timezone=True), nullable=False),
        sa.Column("valid_until", goclaw.contracts.columns.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", goclaw.contracts.columns.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["source_entity_id"],
            ["kg_entities.id"],
        ),
        sa.ForeignKeyConstraint(
            ["target_entity_id"],
            ["kg_entities.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("kg_relations", schema=None) as batch_op:
        batch_op.create_index("ix_kg_relations_scope", ["agent_id", "user_id"], unique=False)
        batch_op.create_index(
            "uq_kg_relations_current",
            ["agent_id", "user_id", "source_entity_id", "relation_type", "target_entity_id"],
            unique=True,
            sqlite_where=sa.text("valid_until IS NULL"),
            postgresql_where=sa.text("valid_until IS NULL"),
        )


def _create_kg_dedup_candidates() -> None:
    op.create_table(
        "kg_dedup_candidates",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("user_id", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("entity_a_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("entity_b_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("cosine", sa.Float(), nullable=False),
        sa.Column("name_similarity", sa.Float(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("created_at", goclaw.contracts.columns.UTCDateTime(timezone=True), nullable=False),
        sa.Column("reviewed_at", goclaw.contracts.columns.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("entity_a_id", "entity_b_id", name="uq_kg_dedup_pair"),
    )


TABLES = {
    "kg_entities": _create_kg_entities,
    "kg_relations": _create_kg_relations,
    "kg_dedup_candidates": _create_kg_dedup_candidates,
}


def upgrade() -> None:
    existing = sa.inspect(op.get_bind())
    for name, create in TABLES.items():  # parents first
        if not existing.has_table(name, existing.default_schema_name):
            create()


def downgrade() -> None:
    for name in reversed(TABLES):
        op.drop_table(name)
