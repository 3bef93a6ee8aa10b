"""kg: a change counter per agent, moved by triggers

Revision ID: kg_0002
Revises: kg_0001
Create Date: 2026-12-06 00:00:00

The KG tier of ``memory_search`` keeps an in-memory index of each agent's current facts
(:mod:`goclaw_kg.memory_tier`). To know whether it is current, a search reads the agent's
counter in ``kg_versions``, which these triggers move on every change a search can see,
whoever writes: an insert or delete of an entity or relation, or an update of a column a fact's
text, scope or date reads (names, types, description, endpoints, user, validity). A relation's
text holds its endpoints' names: renaming an entity moves the same agent's counter. Agents
that already have facts get a counter here, so a missing counter means an agent with none.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "kg_0002"
down_revision = "kg_0001"
branch_labels = None
depends_on = None

# Per table, the columns a search reads: an UPDATE of anything else (confidence, properties,
# embedding, merged_into, updated_at) moves nothing.
SEARCHED = {
    "kg_entities": "agent_id, user_id, name, entity_type, description, valid_from, valid_until",
    "kg_relations": (
        "agent_id, user_id, source_entity_id, relation_type, target_entity_id, valid_from, valid_until"
    ),
}
_BUMP = (
    "INSERT INTO kg_versions (agent_id, version) VALUES ({who}.agent_id, 1) "
    "ON CONFLICT (agent_id) DO UPDATE SET version = kg_versions.version + 1"
)

PG_FUNCTION = f"""
CREATE OR REPLACE FUNCTION goclaw_kg_changed() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP <> 'DELETE' THEN
        {_BUMP.format(who="NEW")};
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.agent_id IS DISTINCT FROM NEW.agent_id) THEN
        {_BUMP.format(who="OLD")};
    END IF;
    RETURN NULL;
END
$$
"""


def _sqlite_triggers(table: str) -> dict[str, str]:
    short = table.removeprefix("kg_")
    return {
        f"kg_{short}_changed_insert": f"AFTER INSERT ON {table} BEGIN {_BUMP.format(who='NEW')}; END",
        f"kg_{short}_changed_delete": f"AFTER DELETE ON {table} BEGIN {_BUMP.format(who='OLD')}; END",
        f"kg_{short}_changed_update": (
            f"AFTER UPDATE OF {SEARCHED[table]} ON {table} BEGIN {_BUMP.format(who='NEW')}; END"
        ),
        f"kg_{short}_changed_move": (
            f"AFTER UPDATE OF agent_id ON {table} WHEN OLD.agent_id IS NOT NEW.agent_id "
            f"BEGIN {_BUMP.format(who='OLD')}; END"
        ),
    }


SQLITE_TRIGGERS = {name: body for table in SEARCHED for name, body in _sqlite_triggers(table).items()}


def upgrade() -> None:
    if not sa.inspect(op.get_bind()).has_table("kg_versions"):
        op.create_table(
            "kg_versions",
            sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
            sa.Column("version", sa.BigInteger(), nullable=False),
            sa.PrimaryKeyConstraint("agent_id"),
        )
    op.execute(
        "INSERT INTO kg_versions (agent_id, version) SELECT agent_id, 1 FROM (SELECT agent_id "
        "FROM kg_entities UNION SELECT agent_id FROM kg_relations) AS had WHERE true "  # SQLite: WHERE
        "ON CONFLICT (agent_id) DO NOTHING"  # before ON CONFLICT, else it parses as a join's ON
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_FUNCTION)
        for table, columns in SEARCHED.items():
            op.execute(f"DROP TRIGGER IF EXISTS {table}_changed ON {table}")
            op.execute(
                f"CREATE TRIGGER {table}_changed AFTER INSERT OR DELETE OR UPDATE OF {columns} "
                f"ON {table} FOR EACH ROW EXECUTE FUNCTION goclaw_kg_changed()"
            )
    else:
        for name, body in SQLITE_TRIGGERS.items():
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
            op.execute(f"CREATE TRIGGER {name} {body}")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in SEARCHED:
            op.execute(f"DROP TRIGGER IF EXISTS {table}_changed ON {table}")
        op.execute("DROP FUNCTION IF EXISTS goclaw_kg_changed()")
    else:
        for name in SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.drop_table("kg_versions")
