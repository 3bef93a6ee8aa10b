"""The memory tables hash-partitioned by agent_id with the recipe of docs/postgres.md, applied
after the migrations to a database holding agents: twin databases, one partitioned and one
plain, given the same writes, search alike and keep the same statistics and postings, under both
search backends (the postgresql one reading vectors through its HNSW index here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from goclaw.engine import Engine
from goclaw.forget import forget_agent, forget_user
from goclaw_memory.pg_stats import missing_triggers
from goclaw_memory.testing.fixtures import private_schema
from tests.memory_helpers import pg_postings_of, run_script, search_all, seed_agent, sql_block, write

pytestmark = pytest.mark.postgres

AGENTS = ("ada", "bob", "cy")


def open_engine(workspace: Path, url: str, backend: str) -> Any:
    workspace.mkdir(exist_ok=True)
    return Engine.open(workspace, url, plugins={"memory": {"backend": backend}})


def seeded(workspace: Path, url: str, backend: str) -> None:
    eng = open_engine(workspace, url, backend)
    try:
        for i, name in enumerate(AGENTS):
            seed_agent(eng, name, kettles=2 + i)
    finally:
        eng.close()


def writes(eng: Any) -> None:
    """Changes of every kind: a file rewritten, one deleted, one added, a user's data forgotten."""
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    write(root, "memory/k0.md", "The kettle 0 of ada was replaced by a samovar.\n")
    (root / "memory/k1.md").unlink()
    write(root, "memory/samovar.md", "A samovar keeps the tea hot all day; no kettle needed.\n")
    eng.memory.index("ada")
    seed_agent(eng, "dee", kettles=3)
    forget_user(eng, "u1", agent="bob", dry_run=False)


def without_ids(hits: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """Hits without their ids (which hold the agents' and rows' random ids, different per twin)."""
    return [[{k: v for k, v in h.items() if k != "id"} for h in found] for found in hits]


def state(eng: Any) -> dict[str, Any]:
    """Every agent's searches, and (by agent name) the statistics and postings."""
    names = {a.id: a.name for a in eng.agents.list()}
    searches = {n: without_ids(search_all(eng, n)) for n in sorted(names.values())}  # first: installs
    with eng.db.engine.connect() as c:
        agents = {
            (names[r[0]], int(r[1]), int(r[2]))
            for r in c.execute(
                text(
                    "SELECT agent_id, sum(chunks), sum(terms) FROM memory_agent_stats "
                    "GROUP BY 1 HAVING sum(chunks) > 0"
                )
            )
        }
        terms = {
            (names[r[0]], r[1], int(r[2]))
            for r in c.execute(
                text("SELECT agent_id, term, sum(df) FROM memory_term_stats GROUP BY 1, 2 HAVING sum(df) > 0")
            )
        }
        postings = {(t, int(i)) for t, i in pg_postings_of(c)}
    return {
        "searches": searches,
        "agents": agents,
        "terms": terms,
        "postings": postings,
    }


@pytest.mark.parametrize("backend", ["postgresql", "inprocess"])
def test_partitioned_tables_search_and_write_like_plain_ones(
    backend: str, pg_schema_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Vectors through the HNSW index whatever the agent's size (else exact scans below the line).
    monkeypatch.setattr("goclaw_memory.pg_backend.EXACT_VECTOR_SCAN", 0)
    monkeypatch.setattr("goclaw_memory.pg_backend.SCAN_RATIO", 0)
    with private_schema() as parted_url:
        seeded(tmp_path / "plain", pg_schema_url, backend)
        seeded(tmp_path / "parted", parted_url, backend)
        run_script(parted_url, sql_block("-- goclaw: hash-partition the memory tables"))
        plain = open_engine(tmp_path / "plain", pg_schema_url, backend)
        parted = open_engine(tmp_path / "parted", parted_url, backend)
        try:
            with parted.db.engine.connect() as c:
                kinds = dict(
                    c.execute(
                        text(
                            "SELECT relname, relkind FROM pg_class "
                            "WHERE relnamespace = current_schema()::regnamespace AND relname IN "
                            "('memory_chunks', 'memory_documents', 'memory_packed', 'memory_ords')"
                        )
                    ).all()
                )
                assert kinds == {
                    "memory_chunks": "p",
                    "memory_documents": "p",
                    "memory_packed": "p",
                    "memory_ords": "p",
                }
                # The rows written before the recipe are there, each agent's in one partition
                # (two agents may share one: their ids are random).
                total = c.execute(text("SELECT count(*) FROM memory_chunks")).scalar()
                parts = c.execute(
                    text("SELECT count(DISTINCT tableoid) FROM memory_chunks GROUP BY agent_id")
                ).scalars()
                assert total == 3 * 5 + 3 and list(parts) == [1] * len(AGENTS)
                assert c.execute(text("SELECT to_regclass('ix_memory_chunks_hnsw_256')")).scalar() is not None
                aid = parted.agents.get("ada").id
                one = "[" + ",".join(["0.0625"] * 256) + "]"
                plan = c.execute(
                    text(
                        "EXPLAIN SELECT id FROM memory_chunks WHERE agent_id = :a AND embedding_dim = 256 "
                        "ORDER BY (embedding::vector(256)) <=> CAST(:q AS vector(256)) LIMIT 5"
                    ),
                    {"a": aid, "q": one},
                ).scalars()
                # One agent's search reads one partition (and its HNSW index).
                read = {
                    w.split("_")[2] for line in plan for w in line.split() if w.startswith("memory_chunks_")
                }
                assert len(read) == 1, read
            first = state(parted)
            assert first == state(plain)
            if backend == "postgresql":  # its first use installed the triggers on the new table
                with parted.db.engine.connect() as c:
                    assert not missing_triggers(c)
                assert first["postings"] and first["terms"]
            for eng in (plain, parted):
                writes(eng)
            after = state(parted)
            assert after == state(plain) and after != first
            assert [c.status for c in parted.memory.doctor().checks if c.name == "pg-stats"] == (
                ["ok"] * 4 if backend == "postgresql" else []
            )
            # forget erases through the partitioned tables and counts no partition as a table
            # it did not erase.
            bob = parted.agents.get("bob").id
            report = forget_agent(parted, "bob", dry_run=False)
            assert report.tables_not_erased == []
            with parted.db.engine.connect() as c:
                left = c.execute(text("SELECT count(*) FROM memory_chunks WHERE agent_id = :a"), {"a": bob})
                assert left.scalar() == 0
            forget_agent(plain, "bob", dry_run=False)
            assert state(parted) == state(plain)
        finally:
            plain.close()
            parted.close()
