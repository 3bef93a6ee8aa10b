"""The index checks of ``goclaw memory doctor``: the search backend in use, its saved
index, the full-text terms, and PostgreSQL's full-text and HNSW indexes.

Backend: which one ``[plugins.memory] backend`` selects (``auto``: ``sqlite`` on SQLite,
``postgresql`` on PostgreSQL), and whether its search runs the compiled kernels. Saved index
(``sqlite`` and ``inprocess``, per agent): present, readable, of the current tokenizer and
embedding space, intact (every file's checksum, and each chunk filed under the user the table
names), without leftovers of interrupted saves, and at the database's version (else the next
process's first search builds it from the table or catches up). Full text (every backend): the
retrieval engine's terms stored in ``memory_chunks.lex`` are present, and a random sample of
them is what the current tokenizer produces (a tokenizer upgrade leaves old terms behind: the
in-memory indexes are built from them, PostgreSQL's ``tsv`` is generated from them).
PostgreSQL also: the ``tsv`` column and its GIN index, and an HNSW index for every vector
dimension that has vectors (pgvector indexes up to 2,000 dimensions), a problem when missing
only where the ``postgresql`` backend searches with it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from goclaw_memory.doctor import Check

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

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


def stale_terms(engine: Host, conn: Any, limit: int | None = LEX_SAMPLE) -> tuple[int, int, list[int]]:
    """``(missing, sampled, stale ids)``: chunks without stored terms, and among ``limit``
    random chunks (all when None) those whose terms are not what indexing produces now
    (:func:`out_of_date`)."""
    missing = int(
        conn.execute(
            text("SELECT COUNT(*) FROM memory_chunks WHERE lex IS NULL AND length(text) > 0")
        ).scalar_one()
    )
    sql = (
        "SELECT id, agent_id, text, user_id, path, start_line, end_line, lex FROM memory_chunks "
        "WHERE lex IS NOT NULL"
    )
    rows = conn.execute(text(sql + (f" ORDER BY random() LIMIT {int(limit)}" if limit else ""))).all()
    return missing, len(rows), out_of_date(engine, rows)


def out_of_date(engine: Host, rows: Sequence[Any], agents: dict[str, Any] | None = None) -> list[int]:
    """The ids of ``(id, agent_id, text, user_id, path, start_line, end_line, lex)`` rows whose
    stored terms are not what indexing produces now. Indexing reads a chunk's heading path,
    then its text (:attr:`goclaw_memory.chunking.TextChunk.indexed`); the path is not stored, so
    it comes from chunking the chunk's file again. A chunk its file no longer holds (changed
    since; the next index run re-chunks it) passes when its text's terms end the stored ones.
    ``agents``: the engine's agents by id (read when not given)."""
    from goclaw_memory.reembed import in_files
    from goclaw_search.tokenize import default_tokenizer

    tok = default_tokenizer()
    max_len = int(engine.plugin_settings("memory").max_chunk_len)
    if agents is None:
        agents = {a.id: a for a in engine.agents.list()}
    by_agent: dict[str, list[Any]] = {}
    for r in rows:
        by_agent.setdefault(r[1], []).append(r)
    stale: list[int] = []
    for agent_id, part in by_agent.items():
        agent = agents.get(agent_id)
        folder = Path(engine.agent_dir(agent)) if agent is not None else None
        for r, chunk in zip(part, in_files(folder, part, max_len), strict=True):
            lex = r[7]
            if chunk is not None:
                if " ".join(tok.terms(chunk.indexed)) != lex:
                    stale.append(int(r[0]))
                continue
            own = " ".join(tok.terms(r[2] or ""))
            if not (lex == own or not own or lex.endswith(" " + own)):
                stale.append(int(r[0]))
    return sorted(stale)


def check_full_text(engine: Host, conn: Any) -> Check:
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
    missing, sampled, stale = stale_terms(engine, conn)
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
            "goclaw memory doctor --repair (indexes their files again, which recomputes the terms)",
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


def check_backend(engine: Host) -> tuple[Check, Any, str]:
    """Which search backend the settings select: the check, the backend (None when it cannot
    start) and its name."""
    from goclaw.errors import GoclawError
    from goclaw_memory.settings import resolve_backend

    configured = engine.plugin_settings("memory").backend
    name = resolve_backend(configured, engine.db.backend)
    how = f" (backend = {configured!r} on {engine.db.backend})" if configured == "auto" else ""
    try:
        memory: Any = engine.memory  # this plugin's service (the contract has no backend)
        backend = memory.backend
    except GoclawError as exc:
        fix = "set [plugins.memory] backend to a registered one (docs/memory.md, Backends)"
        return Check("backend", "problem", str(exc), fix), None, name
    what = {
        "sqlite": "exact, in memory, index saved beside the database",
        "inprocess": "exact, in memory, index saved in the workspace",
        "postgresql": "exact ranking computed by the database, nothing held in memory",
    }.get(name, "a plugin's")
    return Check("backend", "info", f"memory search backend {name}{how}: {what}"), backend, name


def check_vector_scan(backend_name: str) -> Check | None:
    """Whether the search runs the compiled kernels or the numpy path (a wheel built without a
    C compiler has no compiled module, and pip says so only with -v): the in-memory engines'
    vector scan, and the ``postgresql`` backend's BM25 scoring of the fetched postings
    (:mod:`goclaw_search.dense`) and the query terms' positions in its rows
    (:func:`goclaw_search.rerank.lex_positions`). None for a backend that uses neither."""
    if backend_name not in ("sqlite", "inprocess", "postgresql"):
        return None
    from goclaw_search import vecq

    if vecq.compiled is not None:
        return Check("vector scan", "ok", "compiled kernels (goclaw_search._vec)")
    if os.environ.get("GOCLAW_SEARCH_NUMPY") == "1":
        return Check("vector scan", "info", "numpy path (GOCLAW_SEARCH_NUMPY=1)")
    slower = (
        "searches score the fetched postings and find the query terms in the rows slower"
        if backend_name == "postgresql"
        else "vector and hybrid searches are slower"
    )
    return Check(
        "vector scan",
        "warning",
        f"numpy path: the compiled kernels are not built, so {slower} (same results)",
        "install a C compiler (e.g. build-essential) and reinstall goclaw from source",
    )


def check_saved_index(engine: Host, agent: Any, conn: Any, path: Path, space: Any) -> Check:
    """The ``inprocess`` backend's saved index of ``agent``: there, readable, current."""
    from goclaw_memory.inprocess_backend import NO_TOKEN
    from goclaw_memory.version_token import VERSION_WORKER, parse_token
    from goclaw_search.tokenize import default_tokenizer

    chunks = int(
        conn.execute(
            text("SELECT COUNT(*) FROM memory_chunks WHERE agent_id = :a"), {"a": agent.id}
        ).scalar_one()
    )
    row = conn.execute(
        text("SELECT value FROM worker_state WHERE worker = :w AND scope = :s"),
        {"w": VERSION_WORKER, "s": agent.id},
    ).first()
    token = (parse_token(row[0]) if row else "") or NO_TOKEN
    fix = f"goclaw memory index --agent {agent.name} (saves the index)"
    details = {"path": str(path), "chunks": chunks}
    if not (path / "meta.json").exists():
        if not chunks:
            return Check("saved-index", "ok", "nothing indexed yet", agent=agent.name, details=details)
        return Check(
            "saved-index",
            "warning",
            f"no saved index for {chunks} chunks: the next process's first search builds it "
            "from the table (seconds at 100k chunks)",
            fix,
            agent.name,
            details,
        )
    try:
        meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
        saved_space = tuple(meta["space"]) if meta.get("space") else None
        indexed = int(meta.get("n_alive", 0))
    except (OSError, ValueError, TypeError, AttributeError) as exc:  # AttributeError: not an object
        return Check(
            "saved-index", "warning", f"saved index unreadable ({exc}): rebuilt", fix, agent.name, details
        )
    stale = []
    if meta.get("tokenizer") != default_tokenizer().version:
        stale.append("another tokenizer")
    if space is not None and saved_space != tuple(space):
        stale.append("another embedding model")
    if stale:
        return Check(
            "saved-index",
            "warning",
            f"the saved index was built with {' and '.join(stale)}: the next search rebuilds it "
            "from the table",
            fix,
            agent.name,
            details,
        )
    damage = _verify_saved(conn, agent, path)
    if damage:
        return Check(
            "saved-index",
            "problem",
            f"the saved index is damaged or was edited ({damage}): no search uses it; the next "
            "one rebuilds it from the table",
            f"goclaw memory index --agent {agent.name} (rebuilds and saves it now)",
            agent.name,
            details,
        )
    details["indexed"] = indexed
    left = _dead_leftovers(path)
    if left:
        details["leftovers"] = left
        return Check(
            "saved-index",
            "warning",
            f"{len(left)} leftover(s) of interrupted index saves beside the saved index: the next "
            "process's first search deletes them",
            fix,
            agent.name,
            details,
        )
    if str(meta.get("token", "")) != token:
        return Check(
            "saved-index",
            "info",
            f"the saved index ({details['indexed']} chunks) is behind the database ({chunks} chunks): "
            "a new process's first search catches up on what changed",
            fix,
            agent.name,
            details,
        )
    return Check(
        "saved-index", "ok", f"saved index current ({chunks} chunks)", agent=agent.name, details=details
    )


def _verify_saved(conn: Any, agent: Any, path: Path) -> str:
    """Why the saved index at ``path`` cannot be used ("" when it can): its checksums and
    structure (:func:`goclaw_search.persist.load_index`), then each live chunk's user as the
    index files it (its scope number) against the table's."""
    import numpy as np

    from goclaw_search.index import SearchIndex

    try:
        saved = SearchIndex.load(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return " ".join(str(exc).replace(str(path) + ": ", "").split())
    rows = conn.execute(
        text("SELECT id, user_id FROM memory_chunks WHERE agent_id = :a"), {"a": agent.id}
    ).all()
    table = {int(i): u or "" for i, u in rows}
    user_of = {code: user for user, code in saved.scopes.items()}
    live = np.flatnonzero(saved.alive[: saved.n]).tolist()
    ids, codes = saved.ids[live].tolist(), saved.scope[live].tolist()
    wrong = sum(1 for i, c in zip(ids, codes, strict=True) if i in table and user_of.get(c) != table[i])
    return f"{wrong} chunks filed under another user than the table's" if wrong else ""


def _dead_leftovers(path: Path) -> list[str]:
    """Leftovers of saves of this index that no live process is writing."""
    from goclaw_memory.snapshot_files import is_leftover, writer_alive

    return sorted(
        p.name for p in path.parent.glob(path.name + ".*") if is_leftover(p.name) and not writer_alive(p.name)
    )


def check_hnsw(conn: Any, used: bool = True) -> list[Check]:
    """HNSW indexes per vector dimension; ``used``: the ``postgresql`` backend searches with
    them (else one line says what is there: ``inprocess`` does not need them)."""
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
    if not used and dims:
        have = [f"{d}-d" for d, _n in dims if d in indexes]
        return [
            Check(
                "hnsw",
                "info",
                "not used by this backend (only backend = 'postgresql' searches with HNSW); "
                + (f"present for {', '.join(have)}" if have else "none built")
                + ": switching to postgresql builds the missing ones at its first goclaw memory index",
                details={"dims": [d for d, _n in dims], "indexed": [d for d, _n in dims if d in indexes]},
            )
        ]
    return checks
