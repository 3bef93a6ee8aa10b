"""The database-wide checks of ``goclaw memory doctor``: full-text and HNSW indexes (issue 11).

SQLite: FTS5 ``integrity-check`` of ``memory_chunks_fts`` against the chunks. PostgreSQL: the
``tsv`` column, its GIN index, rows without a ``tsv``, and an HNSW index for every vector
dimension that has vectors (pgvector indexes up to 2,000 dimensions).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from goclaw_memory.doctor import Check

if TYPE_CHECKING:
    from goclaw.engine import Engine

HNSW_MAX_DIM = 2000


def check_full_text(engine: Engine, conn: Any) -> Check:
    if engine.db.backend == "postgresql":
        return _check_tsv(conn)
    found = conn.execute(
        text("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'memory_chunks_fts'")
    ).first()
    if found is None:
        return Check(
            "full-text", "info", "no FTS5 table: the full-text channel does not use SQLite FTS5 here"
        )
    try:
        conn.exec_driver_sql(
            "INSERT INTO memory_chunks_fts(memory_chunks_fts, rank) VALUES('integrity-check', 1)"
        )
    except Exception as exc:
        conn.rollback()
        reason = " ".join(str(getattr(exc, "orig", exc)).split())
        return Check(
            "full-text",
            "problem",
            f"the FTS5 index does not match the chunks ({reason})",
            "goclaw memory doctor --repair (rebuilds the full-text index from the chunks)",
        )
    return Check("full-text", "ok", "FTS5 integrity-check passed")


def _check_tsv(conn: Any) -> Check:
    column = conn.execute(
        text(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = 'memory_chunks' AND column_name = 'tsv'"
        )
    ).first()
    if column is None:
        return Check(
            "full-text",
            "problem",
            "memory_chunks has no tsv column: the full-text channel cannot run",
            "the schema is damaged: restore the database or re-create the column as the "
            "migrations define it (goclaw/store/migrations)",
        )
    gin = pg_indexes(conn, "USING gin")
    if not any("tsv" in d for _n, d, _v in gin):
        return Check(
            "full-text",
            "problem",
            "no GIN index on memory_chunks.tsv: full-text search scans every row",
            "goclaw memory doctor --repair (creates it)",
        )
    invalid = [n for n, d, valid in gin if "tsv" in d and not valid]
    if invalid:
        return Check(
            "full-text",
            "problem",
            f"the full-text index {invalid[0]} is invalid",
            "goclaw memory doctor --repair (rebuilds it)",
        )
    empty = int(
        conn.execute(
            text("SELECT COUNT(*) FROM memory_chunks WHERE tsv IS NULL AND length(text) > 0")
        ).scalar_one()
    )
    if empty:
        return Check("full-text", "problem", f"{empty} chunks have no tsv value", "goclaw memory index")
    return Check("full-text", "ok", "tsv column and GIN index present")


def pg_indexes(conn: Any, using: str) -> list[tuple[str, str, bool]]:
    rows = conn.execute(
        text(
            "SELECT i.relname, pg_get_indexdef(i.oid), x.indisvalid FROM pg_index x "
            "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid "
            "JOIN pg_namespace n ON n.oid = t.relnamespace "
            "WHERE t.relname = 'memory_chunks' AND n.nspname = current_schema()"
        )
    ).all()
    return [(r[0], r[1], bool(r[2])) for r in rows if using.lower() in r[1].lower()]


def check_hnsw(conn: Any) -> list[Check]:
    dims = [
        (int(r[0]), int(r[1]))
        for r in conn.execute(
            text(
                "SELECT embedding_dim, COUNT(*) FROM memory_chunks WHERE embedding IS NOT NULL "
                "AND embedding_dim IS NOT NULL GROUP BY embedding_dim ORDER BY embedding_dim"
            )
        ).all()
    ]
    indexes: dict[int, tuple[str, bool]] = {}
    for name, definition, valid in pg_indexes(conn, "USING hnsw"):
        m = re.search(r"vector\((\d+)\)", definition)
        if m:
            indexes[int(m.group(1))] = (name, valid)
    checks = []
    for dim, count in dims:
        if dim > HNSW_MAX_DIM:
            checks.append(
                Check(
                    "hnsw",
                    "info",
                    f"{count} vectors of {dim} dimensions are searched exactly "
                    f"(pgvector's HNSW indexes at most {HNSW_MAX_DIM})",
                )
            )
        elif dim not in indexes:
            checks.append(
                Check(
                    "hnsw",
                    "problem",
                    f"no HNSW index for the {count} vectors of {dim} dimensions: vector search "
                    "scans every row",
                    "goclaw memory doctor --repair (builds it; or goclaw "
                    "memory index, which builds the configured model's index)",
                    details={"dim": dim, "vectors": count},
                )
            )
        elif not indexes[dim][1]:
            checks.append(
                Check(
                    "hnsw",
                    "problem",
                    f"the HNSW index {indexes[dim][0]} is invalid",
                    "goclaw memory doctor --repair (rebuilds it)",
                    details={"dim": dim},
                )
            )
        else:
            checks.append(
                Check(
                    "hnsw",
                    "ok",
                    f"HNSW index {indexes[dim][0]} for {count} vectors",
                    details={"dim": dim, "vectors": count},
                )
            )
    if not dims:
        checks.append(Check("hnsw", "info", "no vectors stored yet"))
    return checks
