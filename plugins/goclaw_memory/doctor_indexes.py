"""The database-wide checks of ``goclaw memory doctor``: full-text and HNSW indexes (issue 11).

Full text (both backends): the retrieval engine's terms stored in ``memory_chunks.lex`` are
present, and a random sample of them is what the current tokenizer produces (a tokenizer
upgrade leaves old terms behind: the SQLite index is rebuilt from them, PostgreSQL's ``tsv`` is
generated from them). PostgreSQL also: the ``tsv`` column and its GIN index, and an HNSW index
for every vector dimension that has vectors (pgvector indexes up to 2,000 dimensions).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from goclaw_memory.doctor import Check

if TYPE_CHECKING:
    from goclaw.engine import Engine

HNSW_MAX_DIM = 2000


LEX_SAMPLE = 200  # chunks whose stored terms are re-derived per check


def _has_column(conn: Any, pg: bool, column: str) -> bool:
    if pg:
        sql = (
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
            f"AND table_name = 'memory_chunks' AND column_name = '{column}'"
        )
        return conn.execute(text(sql)).first() is not None
    return any(r[1] == column for r in conn.exec_driver_sql("PRAGMA table_info(memory_chunks)").all())


def stale_terms(conn: Any, limit: int | None = LEX_SAMPLE) -> tuple[int, int, list[int]]:
    """``(missing, sampled, stale ids)``: chunks without stored terms, and among ``limit``
    random chunks (all when None) those whose terms the current tokenizer would not produce."""
    from goclaw.retrieval.tokenize import default_tokenizer

    tok = default_tokenizer()
    missing = int(
        conn.execute(
            text("SELECT COUNT(*) FROM memory_chunks WHERE lex IS NULL AND length(text) > 0")
        ).scalar_one()
    )
    sql = "SELECT id, text, lex FROM memory_chunks WHERE lex IS NOT NULL"
    rows = conn.execute(text(sql + (f" ORDER BY random() LIMIT {int(limit)}" if limit else ""))).all()
    stale = [int(r[0]) for r in rows if " ".join(tok.terms(r[1] or "")) != r[2]]
    return missing, len(rows), stale


def check_full_text(engine: Engine, conn: Any) -> Check:
    """Both backends search the terms stored in ``memory_chunks.lex`` (SQLite: the in-memory
    BM25 index is built from them; PostgreSQL: ``tsv`` is generated from them)."""
    pg = engine.db.backend == "postgresql"
    if not _has_column(conn, pg, "lex"):
        return Check(
            "full-text",
            "problem",
            "memory_chunks has no lex column: the full-text channel has no terms",
            "the schema is damaged: restore the database (goclaw migrates a healthy one on open)",
        )
    missing, sampled, stale = stale_terms(conn)
    if missing or stale:
        parts = [f"{missing} chunks have no full-text terms"] if missing else []
        if stale:
            parts.append(
                f"{len(stale)} of {sampled} sampled chunks carry terms the current tokenizer would not "
                "produce (was it upgraded?)"
            )
        return Check(
            "full-text",
            "problem",
            "; ".join(parts),
            "goclaw memory doctor --repair (recomputes the terms and rebuilds the search index)",
            details={"missing": missing, "sampled": sampled, "stale": len(stale)},
        )
    if pg:
        return _check_tsv(conn)
    return Check("full-text", "ok", f"terms present, {sampled} sampled chunks match the tokenizer")


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
