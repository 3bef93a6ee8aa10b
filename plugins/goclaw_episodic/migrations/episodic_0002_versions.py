"""episodic: a change counter per agent, moved by triggers

Revision ID: episodic_0002
Revises: episodic_0001
Create Date: 2026-12-03 15:00:00

Episodic search keeps an in-memory index per agent on both backends, so the episodic tier
costs little when full (searching in PostgreSQL itself costs 7 ms at 1,000 summaries and 30 ms
at 2,000). To know whether its index is current, a search reads the agent's counter in
``episodic_versions``, which these triggers move on every change a search can see (insert,
delete, an update of a searched column; not ``promoted_at``), whoever writes: one indexed read
instead of a pass over the agent's rows. Rows written before this revision are found by the
index's first build; any later change moves the counter.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "episodic_0002"
down_revision = "episodic_0001"
branch_labels = None
depends_on = None

# The columns a search reads: an UPDATE of anything else (promoted_at) moves nothing.
SEARCHED = (
    "agent_id, user_id, summary, l0_abstract, key_topics, lex, embedding, embedding_provider, "
    "embedding_model, embedding_dim, expires_at"
)
_BUMP = (
    "INSERT INTO episodic_versions (agent_id, version) VALUES ({who}.agent_id, 1) "
    "ON CONFLICT (agent_id) DO UPDATE SET version = episodic_versions.version + 1"
)

PG_FUNCTION = f"""
CREATE OR REPLACE FUNCTION goclaw_episodic_changed() RETURNS trigger LANGUAGE plpgsql
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

SQLITE_TRIGGERS = {
    "episodic_changed_insert": f"AFTER INSERT ON episodic_summaries BEGIN {_BUMP.format(who='NEW')}; END",
    "episodic_changed_delete": f"AFTER DELETE ON episodic_summaries BEGIN {_BUMP.format(who='OLD')}; END",
    "episodic_changed_update": (
        f"AFTER UPDATE OF {SEARCHED} ON episodic_summaries BEGIN {_BUMP.format(who='NEW')}; END"
    ),
    "episodic_changed_move": (
        "AFTER UPDATE OF agent_id ON episodic_summaries WHEN OLD.agent_id IS NOT NEW.agent_id "
        f"BEGIN {_BUMP.format(who='OLD')}; END"
    ),
}


def upgrade() -> None:
    existing = sa.inspect(op.get_bind())
    if not existing.has_table("episodic_versions", existing.default_schema_name):
        op.create_table(
            "episodic_versions",
            sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
            sa.Column("version", sa.BigInteger(), nullable=False),
            sa.PrimaryKeyConstraint("agent_id"),
        )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_FUNCTION)
        op.execute("DROP TRIGGER IF EXISTS episodic_changed ON episodic_summaries")
        op.execute(
            f"CREATE TRIGGER episodic_changed AFTER INSERT OR DELETE OR UPDATE OF {SEARCHED} "
            "ON episodic_summaries FOR EACH ROW EXECUTE FUNCTION goclaw_episodic_changed()"
        )
    else:
        for name, body in SQLITE_TRIGGERS.items():
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
            op.execute(f"CREATE TRIGGER {name} {body}")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS episodic_changed ON episodic_summaries")
        op.execute("DROP FUNCTION IF EXISTS goclaw_episodic_changed()")
    else:
        for name in SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.drop_table("episodic_versions")
