"""Upgrading an older database in place: data survives, the new schema applies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import text

from goclaw.engine import Engine
from goclaw.store import migrate
from goclaw.store.database import Database
from tests.legacy_schema import build_legacy


def test_upgrade_from_0001_keeps_data_and_applies_0002(workspace: Path, database_url: str | None) -> None:
    db = Database.for_workspace(workspace, database_url)
    build_legacy(db, "0001")  # the pre-split chain: the kernel made every table then
    with db.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO agents (id, tenant_id, name, display_name, agent_type, status, description,"
                " settings, created_at, updated_at) VALUES ('a1', 'default', 'legacy', '', 'open', 'active',"
                " 'from 0001', '{}', :t, :t)"
            ),
            {"t": "2026-01-01 00:00:00"},
        )
        conn.execute(
            text(
                "INSERT INTO memory_documents (id, agent_id, user_id, path, content_hash, size, mtime,"
                " chunk_count, indexed_at) VALUES (1, 'a1', '', 'MEMORY.md', 'h', 10, 0, 1, :t)"
            ),
            {"t": "2026-01-01 00:00:00"},
        )
        conn.execute(
            text(
                "INSERT INTO memory_chunks (id, document_id, agent_id, user_id, path, start_line,"
                " end_line, text, chunk_hash)"
                " VALUES (1, 1, 'a1', '', 'MEMORY.md', 1, 1, 'Refund for TCK-4471 sent', 'c')"
            )
        )
    db.dispose()

    with Engine.open(workspace, database_url=database_url) as engine:  # upgrades on open
        assert migrate.current_revision(engine.db) == migrate.known_revisions()[0]
        assert engine.agents.get("legacy").description == "from 0001"
        with engine.db.engine.connect() as conn:
            assert conn.execute(text("SELECT text FROM memory_chunks WHERE id = 1")).scalar() == (
                "Refund for TCK-4471 sent"
            )
            if engine.db.backend == "postgresql":
                tsv = conn.execute(text("SELECT tsv::text FROM memory_chunks WHERE id = 1")).scalar()
                assert "'4471'" in tsv and "'-4471'" not in tsv


def test_hyphenated_codes_match_on_both_backends(engine: Any) -> None:
    agent = engine.agents.create("codes")
    folder = engine.agent_dir(agent)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "MEMORY.md").write_text(
        "# Tickets\n\nThe refund for TCK-4471 was issued as re_3QxT7mK2Lp9.\n\n"
        "# Other\n\nTCK-1000 was about a password reset.\n"
    )
    engine.memory.index("codes")
    for query in ("4471", "TCK-4471", "tck 4471", "3QxT7mK2Lp9"):
        hits = engine.memory.search(query, "codes", channel="lexical")
        assert hits, query
        assert "TCK-4471" in hits[0].snippet, (query, hits[0].snippet)
