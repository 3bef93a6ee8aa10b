"""The PostgreSQL checks of ``goclaw memory doctor`` beyond its indexes
(:mod:`goclaw_memory.doctor_indexes`):

* **pg-extensions**: pgvector installed, and at 0.8 or later (iterative HNSW scans: a scoped
  search of a large agent among many still finds its nearest chunks);
* **pg-stats** (per agent): the BM25 statistics the ``postgresql`` backend ranks with
  (:mod:`goclaw_memory.pg_stats`): their triggers are installed, and the agent's chunk count
  and total length agree with its chunks (a mismatch means a write bypassed the triggers, e.g.
  they were dropped by hand; ``--repair`` reinstalls them and counts everything again), and its
  packed postings' backlog (delta and tombstones) is compacted (``--repair`` compacts it);
* **pg-maintenance**: the planner's statistics of ``memory_chunks`` are fresh (rows changed
  since the last ANALYZE under 20 %) and the statistics table, updated by every write, is not
  mostly dead rows (VACUUM keeps up): docs/postgres.md explains autovacuum's settings.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import text

from goclaw_memory import pg_postings
from goclaw_memory.doctor import Check
from goclaw_memory.pg_stats import missing_triggers

REPAIR = "goclaw memory doctor --repair (reinstalls the triggers and recounts)"


def check_extensions(conn: Any) -> Check:
    row = conn.execute(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).first()
    if row is None:
        return Check("pg-extensions", "problem", "pgvector is not installed", "CREATE EXTENSION vector")
    version = tuple(int(p) for p in re.findall(r"\d+", str(row[0]))[:2])
    if version < (0, 8):
        return Check(
            "pg-extensions",
            "warning",
            f"pgvector {row[0]}: before 0.8 HNSW has no iterative scans, so a large agent's vector "
            "search among many agents can return fewer than its nearest chunks",
            "ALTER EXTENSION vector UPDATE (pgvector 0.8 or later)",
        )
    return Check("pg-extensions", "ok", f"pgvector {row[0]}")


def check_stats(conn: Any, agent: Any) -> Check:
    """The agent's BM25 statistics against its chunks."""
    missing = missing_triggers(conn)
    if missing:
        return Check(
            "pg-stats",
            "problem",
            f"the statistics triggers {', '.join(missing)} are missing: writes no longer update "
            "the BM25 statistics, and full-text ranking drifts",
            REPAIR,
            agent.name,
        )
    kept = conn.execute(
        text("SELECT sum(chunks), sum(terms) FROM memory_agent_stats WHERE agent_id = :a"), {"a": agent.id}
    ).first()
    counted = conn.execute(
        text(
            "SELECT count(*), coalesce(sum(cardinality(array_remove(string_to_array(coalesce(lex, ''), ' '), "
            "''))), 0) FROM memory_chunks WHERE agent_id = :a"
        ),
        {"a": agent.id},
    ).one()
    have = (int(kept[0] or 0), int(kept[1] or 0)) if kept else (0, 0)
    want = (int(counted[0]), int(counted[1]))
    details = {"kept": list(have), "counted": list(want)}
    if have != want:
        return Check(
            "pg-stats",
            "problem",
            f"BM25 statistics say {have[0]} chunks / {have[1]} terms, the table holds {want[0]} / "
            f"{want[1]}: full-text scores are off",
            REPAIR,
            agent.name,
            details,
        )
    delta, tombs = conn.execute(
        text(
            "SELECT (SELECT count(*) FROM memory_delta WHERE agent_id = :a), "
            "(SELECT count(*) FROM memory_tombs WHERE agent_id = :a)"
        ),
        {"a": agent.id},
    ).one()
    details |= {"delta_postings": int(delta), "tombstones": int(tombs)}
    if delta > 10 * pg_postings.COMPACT_ROWS or tombs > 10 * pg_postings.COMPACT_TOMBS:
        return Check(
            "pg-stats",
            "warning",
            f"{delta} postings and {tombs} deleted chunks wait for compaction (searches read them "
            "row by row): compaction is skipped while writers of the agent are in flight",
            "goclaw memory doctor --repair (compacts, waiting for the writers)",
            agent.name,
            details,
        )
    return Check("pg-stats", "ok", f"BM25 statistics current ({want[0]} chunks)", None, agent.name, details)


def check_maintenance(conn: Any) -> list[Check]:
    rows = {
        r[0]: (int(r[1] or 0), int(r[2] or 0), int(r[3] or 0))
        for r in conn.execute(
            text(
                "SELECT relname, n_live_tup, n_dead_tup, n_mod_since_analyze FROM pg_stat_user_tables "
                "WHERE schemaname = current_schema() AND relname IN ('memory_chunks', 'memory_term_stats')"
            )
        )
    }
    checks = []
    live, _dead, changed = rows.get("memory_chunks", (0, 0, 0))
    if live >= 1000 and changed > 0.2 * live:
        checks.append(
            Check(
                "pg-maintenance",
                "warning",
                f"{changed} of {live} chunks changed since memory_chunks was last analysed: the "
                "planner's estimates are stale (autovacuum analyses it when it keeps up)",
                "ANALYZE memory_chunks",
            )
        )
    live, dead, _changed = rows.get("memory_term_stats", (0, 0, 0))
    if dead >= 10_000 and dead > live:
        checks.append(
            Check(
                "pg-maintenance",
                "warning",
                f"memory_term_stats holds {dead} dead rows for {live} live ones: VACUUM is not keeping "
                "up with the writes (docs/postgres.md, Vacuum)",
                "VACUUM memory_term_stats",
            )
        )
    if not checks:
        checks.append(Check("pg-maintenance", "ok", "planner statistics and vacuum keep up"))
    return checks
