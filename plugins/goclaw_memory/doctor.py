"""``goclaw memory doctor``: check each memory channel and say what to run.

Checks, read straight from the tables with plain SQL (no ORM, nothing cached):

* **freshness** (per agent): memory files new, changed or deleted since they were indexed
  (size and mtime first, the content hash when they differ, as the indexer does);
* **consistency** (per agent): documents whose recorded chunk count is not what the index holds;
* **embeddings** (per agent): vectors per (provider, model, dimension) against the configured
  embedder; vectors of another model are invisible to the vector channel;
* **vectors** (per agent): chunks without a vector, and stored vectors whose length is not their
  recorded dimension;
* **full-text**: the retrieval engine's terms (``memory_chunks.lex``) are present and a random
  sample matches the current tokenizer; PostgreSQL: the ``tsv`` column and its GIN index;
* **hnsw** (PostgreSQL): an HNSW index for every dimension that has vectors (pgvector indexes up
  to 2,000 dimensions), and that it is valid; a problem only with the ``postgresql`` backend
  (the default there);
* **pg-extensions**, **pg-stats** (per agent), **pg-maintenance** (PostgreSQL): pgvector's
  version, the BM25 statistics the ``postgresql`` backend ranks with and their triggers, the
  planner's statistics and vacuum (:mod:`goclaw_memory.doctor_pg`);
* **backend**, **vector scan** and **saved-index** (``sqlite`` and ``inprocess``, per agent):
  which search backend runs, whether it searches with the compiled kernels (the in-memory
  engines' vector scan, the ``postgresql`` backend's BM25 scoring and term positions) or
  numpy, and whether its saved index exists and is current
  (:mod:`goclaw_memory.doctor_indexes`);
* **watcher**: the memory watchers running in this process, if any.

Each check is ``ok``, ``info``, ``warning`` or ``problem`` and carries the command that fixes it.
``repair=True`` fixes what no other command fixes: recomputes stale full-text terms, builds missing or
invalid full-text and HNSW indexes, reinstalls the BM25 statistics' triggers and recounts them,
clears vectors of the wrong length and forgets documents
whose chunks are inconsistent (the next ``goclaw memory index`` re-embeds and re-chunks them).
"""

from __future__ import annotations

import gc
import os
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from goclaw.errors import GoclawError
from goclaw_memory.chunking import document_hash
from goclaw_memory.paths import scope_files, user_ids

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

_EXAMPLES = 3


@dataclass
class Check:
    name: str
    status: str  # ok | info | warning | problem
    message: str
    fix: str | None = None
    agent: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class DoctorReport:
    checks: list[Check]
    repaired: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[Check]:
        return [c for c in self.checks if c.status == "problem"]

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": not self.problems,
            "problems": len(self.problems),
            "repaired": self.repaired,
            "checks": [asdict(c) for c in self.checks],
        }


def _index_cmd(agent: str) -> str:
    return f"goclaw memory index --agent {agent}"


def _examples(paths: list[str]) -> str:
    shown = ", ".join(paths[:_EXAMPLES])
    return shown + (f" and {len(paths) - _EXAMPLES} more" if len(paths) > _EXAMPLES else "")


# --------------------------------------------------------------------------- per agent


def check_freshness(engine: Host, agent: Any, conn: Any) -> Check:
    agent_dir = engine.agent_dir(agent)
    rows = conn.execute(
        text("SELECT user_id, path, content_hash, size, mtime FROM memory_documents WHERE agent_id = :a"),
        {"a": agent.id},
    ).all()
    indexed = {(r[0], r[1]): (r[2], int(r[3] or 0), float(r[4] or 0.0)) for r in rows}
    scopes = sorted({"", *user_ids(agent_dir), *(u for u, _p in indexed if u)})
    new: list[str] = []
    changed: list[str] = []
    seen: set[tuple[str, str]] = set()
    for scope in scopes:
        for f in scope_files(agent_dir, scope):
            key = (f.user_id, f.path)
            seen.add(key)
            old = indexed.get(key)
            if old is None:
                new.append(f.path)
                continue
            try:
                st = os.stat(f.abs)
                if st.st_size == old[1] and abs(st.st_mtime - old[2]) < 1e-6:
                    continue  # the indexer's own shortcut would skip it too
                with open(f.abs, "rb") as fh:
                    body = fh.read().decode("utf-8", errors="replace")
            except OSError:
                continue
            if document_hash(body) != old[0]:
                changed.append(f.path)
    deleted = sorted(p for key, p in ((k, k[1]) for k in indexed) if key not in seen)
    details = {"new": new, "changed": changed, "deleted": deleted, "indexed_files": len(indexed)}
    if not (new or changed or deleted):
        return Check(
            "freshness", "ok", f"{len(indexed)} files indexed, all current", agent=agent.name, details=details
        )
    parts = [
        f"{len(v)} {label} ({_examples(v)})"
        for label, v in (("changed", changed), ("new", new), ("deleted", deleted))
        if v
    ]
    return Check(
        "freshness",
        "problem",
        "memory files differ from the index: " + "; ".join(parts),
        _index_cmd(agent.name),
        agent.name,
        details,
    )


def check_consistency(agent: Any, conn: Any) -> Check:
    rows = conn.execute(
        text(
            "SELECT d.path, d.chunk_count, COUNT(c.id) FROM memory_documents d "
            "LEFT JOIN memory_chunks c ON c.document_id = d.id WHERE d.agent_id = :a "
            "GROUP BY d.id, d.path, d.chunk_count HAVING COUNT(c.id) != d.chunk_count"
        ),
        {"a": agent.id},
    ).all()
    if not rows:
        return Check("consistency", "ok", "every document has the chunks it records", agent=agent.name)
    paths = sorted(r[0] for r in rows)
    return Check(
        "consistency",
        "problem",
        f"{len(paths)} documents do not hold the chunks they record ({_examples(paths)}); the "
        "index skips them while their files are unchanged",
        f"goclaw memory doctor --agent {agent.name} --repair, then {_index_cmd(agent.name)}",
        agent.name,
        {"documents": paths},
    )


def _configured_space(engine: Host) -> tuple[tuple[str, str, int] | None, str | None]:
    """The configured embedder's (provider, model, dim), or (None, why not)."""
    configured = engine.embedding_provider_name()
    if configured == "none":
        return None, None
    try:
        embedder = engine.embedder()
    except GoclawError as exc:
        return None, str(exc)
    except Exception as exc:  # a broken provider is exactly what the doctor should report
        return None, f"{type(exc).__name__}: {exc}"
    if embedder is None:
        return None, None
    return (str(embedder.provider), str(embedder.model), int(embedder.dim)), None


def check_vectors(
    engine: Host, agent: Any, conn: Any, space: tuple[str, str, int] | None, space_error: str | None
) -> list[Check]:
    spaces = _vector_spaces(conn, agent)
    total = sum(s["chunks"] for s in spaces)
    with_vec = {
        (s["provider"], s["model"], s["dim"]): s["chunks"] - s["without_vector"]
        for s in spaces
        if s["model"] is not None
    }
    stored = sum(with_vec.values())
    missing = total - stored
    details = {"chunks": total, "spaces": spaces}
    checks = [_embeddings_check(agent.name, space, space_error, with_vec, stored, details)]
    bad = _bad_vectors(engine, conn, agent)
    vectors = _vectors_check(agent.name, space, bad, total, with_vec, missing)
    if vectors is not None:
        checks.append(vectors)
    return checks


def _vector_spaces(conn: Any, agent: Any) -> list[dict[str, Any]]:
    """The agent's chunks per (provider, model, dim), with how many of them lack a vector."""
    rows = conn.execute(
        text(
            "SELECT embedding_provider, embedding_model, embedding_dim, COUNT(*), "
            "SUM(CASE WHEN embedding IS NULL THEN 1 ELSE 0 END) FROM memory_chunks "
            "WHERE agent_id = :a GROUP BY embedding_provider, embedding_model, embedding_dim"
        ),
        {"a": agent.id},
    ).all()
    return [
        {"provider": r[0], "model": r[1], "dim": r[2], "chunks": int(r[3]), "without_vector": int(r[4] or 0)}
        for r in rows
    ]


def _embeddings_check(
    name: str,
    space: tuple[str, str, int] | None,
    space_error: str | None,
    with_vec: dict[Any, int],
    stored: int,
    details: dict[str, Any],
) -> Check:
    """Whether the configured embedder starts and matches the stored vectors' model."""
    if space_error:
        return Check(
            "embeddings",
            "problem",
            f"the embedding provider cannot start: {space_error}",
            "check [plugins.embeddings] in goclaw.toml (provider, model, API key)",
            name,
            details,
        )
    if space is None:
        msg = "no embedding provider configured: the vector channel is off"
        if stored:
            msg += f" and {stored} stored vectors are unused"
        return Check("embeddings", "info", msg, None, name, details)
    label = f"{space[0]}/{space[1]} ({space[2]}-d)"
    other = {k: n for k, n in with_vec.items() if k != space and n}
    if other:
        listed = ", ".join(f"{p}/{m} ({d}-d) x{n}" for (p, m, d), n in sorted(other.items(), key=str))
        return Check(
            "embeddings",
            "problem",
            f"{sum(other.values())} chunks hold vectors of another model ({listed}); the "
            f"configured embedder is {label} and the vector channel ignores them",
            f"{_index_cmd(name)} (re-embeds them with {space[1]})",
            name,
            details,
        )
    return Check("embeddings", "ok", f"{stored} vectors, all {label}", None, name, details)


def _bad_vectors(engine: Host, conn: Any, agent: Any) -> int:
    """How many of the agent's stored vectors do not have their recorded dimension."""
    if engine.db.backend == "postgresql":
        bad_sql = (
            "SELECT COUNT(*) FROM memory_chunks WHERE agent_id = :a AND embedding IS NOT NULL "
            "AND vector_dims(embedding) IS DISTINCT FROM embedding_dim"
        )
    else:
        bad_sql = (
            "SELECT COUNT(*) FROM memory_chunks WHERE agent_id = :a AND embedding IS NOT NULL "
            "AND (embedding_dim IS NULL OR length(embedding) != embedding_dim * 4)"
        )
    return int(conn.execute(text(bad_sql), {"a": agent.id}).scalar_one() or 0)


def _vectors_check(
    name: str,
    space: tuple[str, str, int] | None,
    bad: int,
    total: int,
    with_vec: dict[Any, int],
    missing: int,
) -> Check | None:
    """Whether every chunk has a sound vector of the configured model (None: nothing to say)."""
    if bad:
        return Check(
            "vectors",
            "problem",
            f"{bad} stored vectors do not have their recorded dimension",
            f"goclaw memory doctor --agent {name} --repair, then {_index_cmd(name)}",
            name,
            {"bad_vectors": bad},
        )
    if space is not None and total:
        current = with_vec.get(space, 0)
        if current < total:
            return Check(
                "vectors",
                "problem",
                f"{total - current} of {total} chunks have no {space[1]} vector: the "
                "vector channel cannot find them",
                _index_cmd(name),
                name,
                {"chunks": total, "vectors": current},
            )
        return Check(
            "vectors",
            "ok",
            f"{current} of {total} chunks have a vector",
            None,
            name,
            {"chunks": total, "vectors": current},
        )
    if missing and space is None:
        return Check(
            "vectors", "info", f"{missing} of {total} chunks have no vector (no embedder)", None, name
        )
    return None


def _watchers(engine: Host) -> list[Any]:
    listed = getattr(engine.memory, "watchers", None)
    if isinstance(listed, list | tuple):
        return list(listed)
    from goclaw_memory.watcher import MemoryWatcher

    # The service does not keep its watchers: find this engine's among live objects.
    return [
        o
        for o in gc.get_objects()
        if isinstance(o, MemoryWatcher) and getattr(o.service, "engine", None) is engine
    ]


def check_watcher(engine: Host) -> Check:
    watchers = [w for w in _watchers(engine) if not getattr(w, "_stopping", False)]
    if not watchers:
        return Check(
            "watcher",
            "info",
            "no memory watcher runs in this process: files are re-indexed when goclaw memory index runs",
            "goclaw memory watch (or [plugins.memory] watch = true) to re-index on change",
        )
    dead = [w for w in watchers if w._thread is not None and not w._thread.is_alive()]
    errors = [e for w in watchers for e in w.errors]
    details = {
        "watchers": len(watchers),
        "runs": sum(w.runs for w in watchers),
        "overflows": sum(w.overflows for w in watchers),
        "errors": errors[-5:],
    }
    if dead:
        return Check(
            "watcher",
            "problem",
            "a memory watcher has stopped: changes are no longer indexed",
            "restart the process (or goclaw memory watch)",
            details=details,
        )
    if errors:
        return Check(
            "watcher",
            "warning",
            f"the watcher's last re-index failed: {errors[-1]}",
            "goclaw memory index, and see the log",
            details=details,
        )
    return Check(
        "watcher",
        "ok",
        f"{len(watchers)} watcher(s) running, {details['runs']} re-index runs",
        details=details,
    )


# --------------------------------------------------------------------------- entry point


def run_doctor(engine: Host, agent: str | None = None, *, repair: bool = False) -> DoctorReport:
    """Run every check (for one agent or all); with ``repair`` fix what can be fixed, then check
    again."""
    from goclaw_memory.doctor_indexes import (
        check_backend,
        check_full_text,
        check_hnsw,
        check_saved_index,
        check_vector_scan,
    )
    from goclaw_memory.doctor_pg import check_extensions, check_maintenance, check_stats
    from goclaw_memory.sqlite_backend import SQLiteSearchBackend

    repaired = _repair(engine, agent) if repair else []
    agents = [engine.agents.get(agent)] if agent else engine.agents.list()
    space, space_error = _configured_space(engine)
    backend_check, backend, backend_name = check_backend(engine)
    checks: list[Check] = [backend_check]
    if (scan := check_vector_scan(backend_name)) is not None:
        checks.append(scan)
    saves = backend if isinstance(backend, SQLiteSearchBackend) else None  # inprocess too
    with engine.db.engine.connect() as conn:
        for a in agents:
            checks.append(check_freshness(engine, a, conn))
            checks.append(check_consistency(a, conn))
            checks.extend(check_vectors(engine, a, conn, space, space_error))
            if saves is not None and (path := saves.saved_index(a.id)) is not None:
                checks.append(check_saved_index(engine, a, conn, path, space))
            if backend_name == "postgresql":  # only this backend keeps and reads them
                checks.append(check_stats(conn, a))
        checks.append(check_full_text(engine, conn))
        if engine.db.backend == "postgresql":
            checks.extend(check_hnsw(conn, used=backend_name == "postgresql"))
            checks.append(check_extensions(conn))
            checks.extend(check_maintenance(conn))
    checks.append(check_watcher(engine))
    return DoctorReport(checks, repaired)


def _repair(engine: Host, agent: str | None) -> list[str]:
    from goclaw_memory.repair import repair

    return repair(engine, agent)
