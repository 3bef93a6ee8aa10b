"""The ``postgresql`` backend's postings keyed by term ids: a workspace of the previous schema
(postings keyed by agent and term text) is converted by its migration, and the dictionary
keeps no term that only erased text held."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from tests.memory_helpers import index_kettle_and_ferry, open_with_backend, pg_postings, write

pytestmark = pytest.mark.usefixtures("pg_schema_url")


def _open(url: str, workspace: Path) -> Any:
    return open_with_backend(url, workspace, "postgresql")


def _memory_chain(conn: Any) -> Any:
    from goclaw.store import migrate
    from goclaw_memory.tables import MIGRATIONS

    return migrate._alembic_config(conn, migrate.Chain("memory", MIGRATIONS))


def test_the_migration_converts_postings_of_the_previous_schema(pg_schema_url: str, workspace: Path) -> None:
    from alembic import command

    from goclaw_memory.pg_stats import TRIGGERS

    eng = _open(pg_schema_url, workspace)
    try:
        index_kettle_and_ferry(eng)
        before = pg_postings(eng)
        with eng.db.engine.connect() as conn, conn.begin():
            command.downgrade(_memory_chain(conn), "memory_0004")
            # The previous backend's state: its triggers installed, its postings written.
            conn.exec_driver_sql(
                "INSERT INTO memory_postings (agent_id, term, impact, chunk_id) "
                "SELECT c.agent_id, t.term, 0.5, c.id FROM memory_chunks c, "
                "unnest(string_to_array(c.lex, ' ')) AS t(term) WHERE t.term <> '' GROUP BY 1, 2, 4"
            )
            for sql in TRIGGERS:
                conn.exec_driver_sql(sql)
    finally:
        eng.close()
    eng = _open(pg_schema_url, workspace)  # migrates to the head
    try:
        assert pg_postings(eng) == before
        hits = eng.memory.search("kettle", "ada", channel="lexical")
        assert [h.path for h in hits] == ["memory/a.md"]
        root = Path(eng.agent_dir(eng.agents.get("ada")))
        write(root, "memory/c.md", "A lighthouse keeper.\n")
        eng.memory.index("ada")  # the triggers write the new postings
        assert [h.path for h in eng.memory.search("lighthouse", "ada", channel="lexical")] == ["memory/c.md"]
    finally:
        eng.close()


def test_a_term_only_erased_text_held_leaves_the_dictionary(pg_schema_url: str, workspace: Path) -> None:
    eng = _open(pg_schema_url, workspace)
    try:
        eng.agents.create("ada")
        root = Path(eng.agent_dir(eng.agents.get("ada")))
        write(root, "memory/a.md", "The harbour ferry leaves at noon.\n")
        write(root, "memory/b.md", "The zanzibarite ledger, and the ferry.\n")
        eng.memory.index("ada")
        (root / "memory" / "b.md").unlink()
        eng.memory.index("ada")
        with eng.db.engine.connect() as c:
            terms = {r[0] for r in c.execute(text("SELECT term FROM memory_terms"))}
        assert "ferri" in terms or "ferry" in terms
        assert not any(t.startswith("zanzibar") for t in terms)
    finally:
        eng.close()
