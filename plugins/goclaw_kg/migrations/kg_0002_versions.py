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
SQLite runs a trigger per row; PostgreSQL one per statement (see ``_PG_BUMP``).
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

# PostgreSQL: statement-level triggers over the transition tables, so a statement moves each
# agent's counter once, however many rows it writes (an update of the same counter row for each
# row costs more with every row in one transaction: 4,000 rows copied by one INSERT ... SELECT
# take 33 ms and one bump; benchmarks/results/2026-12-06-kg-tier.md). A transition table cannot go with
# a column list, so the UPDATE trigger sees every update and bumps the agents of the rows whose
# searched columns (or id) differ: the rows of either table missing from the other.
_PG_BUMP = (
    "INSERT INTO kg_versions (agent_id, version) SELECT DISTINCT agent_id, 1 FROM ({rows}) AS moved "
    "ON CONFLICT (agent_id) DO UPDATE SET version = kg_versions.version + 1"
)


def _pg_function(table: str) -> str:
    cols = f"id, {SEARCHED[table]}"
    differ = (
        f"(SELECT {cols} FROM new_rows EXCEPT ALL SELECT {cols} FROM old_rows) UNION ALL "
        f"(SELECT {cols} FROM old_rows EXCEPT ALL SELECT {cols} FROM new_rows)"
    )
    return f"""
CREATE OR REPLACE FUNCTION goclaw_{table}_changed() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {_PG_BUMP.format(rows="SELECT agent_id FROM new_rows")};
    ELSIF TG_OP = 'DELETE' THEN
        {_PG_BUMP.format(rows="SELECT agent_id FROM old_rows")};
    ELSE
        {_PG_BUMP.format(rows=differ)};
    END IF;
    RETURN NULL;
END
$$
"""


_PG_TRIGGERS = {
    "insert": "INSERT ON {table} REFERENCING NEW TABLE AS new_rows",
    "delete": "DELETE ON {table} REFERENCING OLD TABLE AS old_rows",
    "update": "UPDATE ON {table} REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
}


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
    existing = sa.inspect(op.get_bind())
    if not existing.has_table("kg_versions", existing.default_schema_name):
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
        for table in SEARCHED:
            op.execute(_pg_function(table))
            for event, spec in _PG_TRIGGERS.items():
                op.execute(f"DROP TRIGGER IF EXISTS {table}_changed_{event} ON {table}")
                op.execute(
                    f"CREATE TRIGGER {table}_changed_{event} AFTER {spec.format(table=table)} "
                    f"FOR EACH STATEMENT EXECUTE FUNCTION goclaw_{table}_changed()"
                )
    else:
        for name, body in SQLITE_TRIGGERS.items():
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
            op.execute(f"CREATE TRIGGER {name} {body}")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in SEARCHED:
            for event in _PG_TRIGGERS:
                op.execute(f"DROP TRIGGER IF EXISTS {table}_changed_{event} ON {table}")
            op.execute(f"DROP FUNCTION IF EXISTS goclaw_{table}_changed()")
    else:
        for name in SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.drop_table("kg_versions")
