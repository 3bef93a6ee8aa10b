"""The ``postgresql`` backend's packed postings replace the impact-ordered layout of earlier
versions: a workspace of that schema is migrated and packed."""

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


@pytest.mark.parametrize("triggers", [False, True], ids=["without-triggers", "with-triggers"])
def test_a_database_of_the_previous_layout_is_packed(
    pg_schema_url: str, workspace: Path, triggers: bool
) -> None:
    """A workspace of the impact-ordered layout (``memory_postings`` and its dictionary) is
    migrated: those tables go; where the backend's triggers were installed the migration packs
    every chunk itself, else the backend's first use does."""
    from alembic import command

    from goclaw_memory.pg_stats import TRIGGERS

    eng = _open(pg_schema_url, workspace)
    try:
        index_kettle_and_ferry(eng)
        before = pg_postings(eng)
        with eng.db.engine.connect() as conn, conn.begin():
            command.downgrade(_memory_chain(conn), "memory_0006")
            assert conn.execute(text("SELECT to_regclass('memory_terms')")).scalar() is not None
            assert conn.execute(text("SELECT to_regclass('memory_packed')")).scalar() is None
            if triggers:  # the previous backend in use: its triggers on the chunks
                for sql in TRIGGERS:
                    conn.exec_driver_sql(sql)
    finally:
        eng.close()
    eng = _open(pg_schema_url, workspace)  # migrates to the head
    try:
        with eng.db.engine.connect() as conn:
            for old in ("memory_terms", "memory_postings", "memory_postings_ref"):
                assert conn.execute(text("SELECT to_regclass(:t)"), {"t": old}).scalar() is None, old
            packed = conn.execute(text("SELECT count(*) FROM memory_packed")).scalar()
            assert bool(packed) == triggers  # packed by the migration, before any search
        hits = eng.memory.search("kettle", "ada", channel="lexical")
        assert [h.path for h in hits] == ["memory/a.md"]
        assert pg_postings(eng) == before
        root = Path(eng.agent_dir(eng.agents.get("ada")))
        write(root, "memory/c.md", "A lighthouse keeper.\n")
        eng.memory.index("ada")  # the triggers write the new postings
        assert [h.path for h in eng.memory.search("lighthouse", "ada", channel="lexical")] == ["memory/c.md"]
    finally:
        eng.close()
