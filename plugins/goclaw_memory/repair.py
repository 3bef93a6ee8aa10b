"""``goclaw memory doctor --repair``: fix what no other command fixes.

* forget documents whose chunks disagree with their recorded count (the next ``memory index``
  re-chunks them: it would otherwise skip them while their files are unchanged);
* clear stored vectors whose length is not their recorded dimension (the next index re-embeds);
* index again the documents whose chunks' full-text terms (``memory_chunks.lex``) are missing
  or are not what the current tokenizer produces (the terms include the chunk's heading path,
  which is not stored: only chunking the file again recomputes them; vectors come from the
  embedding cache);
* PostgreSQL: create a missing GIN index on ``tsv``, build missing HNSW indexes through the
  search backend (the same definition searches use), ``REINDEX`` invalid ones; reinstall the
  BM25 statistics' triggers when one is missing or the statistics disagree with the chunks, and
  count them afresh (:mod:`goclaw_memory.pg_stats`); store the passage sketches the checked
  agents' embedded chunks lack (:mod:`goclaw_memory.pg_sketches`).

Every change that touches chunks runs in one transaction per agent and replaces the agent's
index version token, so other processes reload their in-memory copies.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from goclaw.errors import GoclawError

BATCH = 2000

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from goclaw.contracts.host import Host


def _bad_vector_sql(pg: bool) -> str:
    if pg:
        return "embedding IS NOT NULL AND vector_dims(embedding) IS DISTINCT FROM embedding_dim"
    return "embedding IS NOT NULL AND (embedding_dim IS NULL OR length(embedding) != embedding_dim * 4)"


def _repair_agent(engine: Host, agent: Any) -> list[str]:
    from goclaw_memory.indexer import bump_version

    pg = engine.db.backend == "postgresql"

    def _do(session: Session) -> list[str]:
        conn = session.connection()
        done: list[str] = []
        broken = conn.execute(
            text(
                "SELECT d.id, d.path FROM memory_documents d LEFT JOIN memory_chunks c "
                "ON c.document_id = d.id WHERE d.agent_id = :a GROUP BY d.id, d.path, d.chunk_count "
                "HAVING COUNT(c.id) != d.chunk_count"
            ),
            {"a": agent.id},
        ).all()
        for doc_id, path in broken:
            conn.execute(text("DELETE FROM memory_chunks WHERE document_id = :d"), {"d": doc_id})
            conn.execute(text("DELETE FROM memory_documents WHERE id = :d"), {"d": doc_id})
            done.append(f"{agent.name}: forgot {path} (re-chunked by the next index)")
        cleared = conn.execute(
            text(
                "UPDATE memory_chunks SET embedding = NULL, embedding_provider = NULL, "
                f"embedding_model = NULL, embedding_dim = NULL WHERE agent_id = :a AND {_bad_vector_sql(pg)}"
            ),
            {"a": agent.id},
        ).rowcount
        if cleared:
            done.append(
                f"{agent.name}: cleared {cleared} vectors of the wrong length (re-embedded by the next index)"
            )
        if done:
            bump_version(session, agent.id)
        return done

    done = engine.db.run_write(_do)
    if done:
        engine.memory.invalidate(agent.id)
    return done


def _repair_terms(engine: Host) -> list[str]:
    """Index again the documents holding chunks whose terms are missing or out of date (see the
    module docstring): their recorded hash is cleared, so the index run chunks them afresh."""
    from goclaw_memory.doctor_indexes import out_of_date, stale_terms

    with engine.db.engine.connect() as conn:
        missing, _sampled, stale = stale_terms(engine, conn)
    if not missing and not stale:
        return []
    by_id = {a.id: a for a in engine.agents.list()}
    docs: dict[str, set[int]] = {}
    last = 0
    while True:
        with engine.db.engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT id, agent_id, text, user_id, path, start_line, end_line, lex, document_id "
                    "FROM memory_chunks WHERE id > :last ORDER BY id LIMIT :n"
                ),
                {"last": last, "n": BATCH},
            ).all()
        if not rows:
            break
        last = int(rows[-1][0])
        bad = set(out_of_date(engine, [r for r in rows if r[7] is not None], by_id))
        for r in rows:
            if r[7] is None or int(r[0]) in bad:
                docs.setdefault(r[1], set()).add(int(r[8]))
    done = []
    for agent_id, ids in sorted(docs.items()):

        def _do(session: Session, ids: set[int] = ids) -> None:
            session.connection().execute(
                text("UPDATE memory_documents SET content_hash = '' WHERE id = :d"),
                [{"d": d} for d in sorted(ids)],
            )

        engine.db.run_write(_do)
        agent = by_id.get(agent_id)
        if agent is None:
            continue
        engine.memory.index(agent)
        done.append(f"{agent.name}: indexed {len(ids)} documents again (out-of-date full-text terms)")
    return done


def _repair_pg_indexes(engine: Host) -> list[str]:
    from goclaw_memory.doctor_indexes import HNSW_MAX_DIM, pg_indexes
    from goclaw_memory.settings import resolve_backend

    done: list[str] = []
    with engine.db.engine.connect() as conn:
        gin = pg_indexes(conn, "USING gin")
        hnsw = pg_indexes(conn, "USING hnsw")
        dims = [
            int(r[0])
            for r in conn.execute(
                text(
                    "SELECT DISTINCT embedding_dim FROM memory_chunks WHERE embedding IS NOT NULL "
                    "AND embedding_dim IS NOT NULL"
                )
            ).all()
        ]
        has_tsv = conn.execute(
            text(
                "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = 'memory_chunks' AND column_name = 'tsv'"
            )
        ).first()
    with engine.db.engine.connect() as conn, conn.begin():
        if has_tsv is not None and not any("tsv" in d for _n, d, _v in gin):
            conn.exec_driver_sql(
                "CREATE INDEX IF NOT EXISTS ix_memory_chunks_tsv ON memory_chunks USING GIN (tsv)"
            )
            done.append("created the GIN index on memory_chunks.tsv")
        for name, _definition, valid in gin + hnsw:
            if not valid:
                conn.exec_driver_sql(f'REINDEX INDEX "{name}"')
                done.append(f"rebuilt the invalid index {name}")
    indexed = {int(m.group(1)) for _n, d, _v in hnsw if (m := re.search(r"vector\((\d+)\)", d))}
    # A fresh backend: the engine's own may remember the index as built.
    from goclaw_memory.pg_backend import PostgresSearchBackend

    backend = PostgresSearchBackend(engine)
    # HNSW serves only the postgresql backend (the default): not built for another (inprocess).
    uses_hnsw = resolve_backend(engine.plugin_settings("memory").backend, "postgresql") == "postgresql"
    missing = [d for d in dims if d <= HNSW_MAX_DIM and d not in indexed] if uses_hnsw else []
    if missing:
        for dim in missing:
            backend.prepare_vectors(dim)
        backend.finish_vectors()
        done.extend(f"built the HNSW index for {dim}-dimension vectors" for dim in missing)
    return done


def repair(engine: Host, agent: str | None = None) -> list[str]:
    """Apply the repairs; returns one line per thing done."""
    agents = [engine.agents.get(agent)] if agent else engine.agents.list()
    done: list[str] = []
    for a in agents:
        done.extend(_repair_agent(engine, a))
    done.extend(_repair_terms(engine))
    if engine.db.backend == "postgresql":
        done.extend(_repair_pg_indexes(engine))
        # The statistics triggers serve only the postgresql backend: not installed for another.
        from goclaw_memory.settings import resolve_backend

        if resolve_backend(engine.plugin_settings("memory").backend, "postgresql") == "postgresql":
            done.extend(_repair_pg_stats(engine))
            done.extend(_compact_pg_postings(engine))
            done.extend(_fill_pg_sketches(engine, agents))
    return done


def _fill_pg_sketches(engine: Host, agents: list[Any]) -> list[str]:
    """Store the passage sketches the agents' embedded chunks lack (indexed before sketches were
    stored, or with the passage step off), when the step reads them
    (:func:`goclaw_memory.pg_sketches.fill`)."""
    from goclaw_memory.passage_sketch import sketcher
    from goclaw_memory.pg_sketches import fill

    try:
        embedder = engine.embedder()
    except GoclawError:
        return []
    if embedder is None:
        return []
    space = (embedder.provider, embedder.model, int(embedder.dim))
    make = sketcher(engine, space)
    if make is None:
        return []
    done = []
    for a in agents:
        if n := fill(engine, a.id, space, make):
            done.append(f"{a.name}: stored the passage sketches of {n} chunks")
    return done


def _repair_pg_stats(engine: Host) -> list[str]:
    from goclaw_memory.pg_stats import install, missing_triggers

    with engine.db.engine.connect() as conn, conn.begin():
        if not missing_triggers(conn):
            off = conn.execute(
                text(
                    "SELECT 1 FROM (SELECT agent_id, count(*) AS n, coalesce(sum(cardinality(array_remove("
                    "string_to_array(coalesce(lex, ''), ' '), ''))), 0) AS t FROM memory_chunks "
                    "GROUP BY agent_id) c FULL JOIN (SELECT agent_id, sum(chunks) AS chunks, "
                    "sum(terms) AS terms FROM memory_agent_stats GROUP BY agent_id) s USING (agent_id) "
                    "WHERE c.n IS DISTINCT FROM s.chunks OR c.t IS DISTINCT FROM s.terms LIMIT 1"
                )
            ).first()
            if off is None:
                return []
        install(conn.exec_driver_sql)
    return ["reinstalled the BM25 statistics' triggers and counted every chunk again"]


def _compact_pg_postings(engine: Host) -> list[str]:
    """Compact every agent with a packed-postings backlog, waiting for its writers."""
    from goclaw_memory import pg_postings

    with engine.db.engine.connect() as conn:
        agents = (
            conn.execute(
                text(
                    "SELECT agent_id FROM memory_delta GROUP BY agent_id HAVING count(*) > :r UNION "
                    "SELECT agent_id FROM memory_tombs GROUP BY agent_id HAVING count(*) > :t"
                ),
                {"r": 10 * pg_postings.COMPACT_ROWS, "t": 10 * pg_postings.COMPACT_TOMBS},
            )
            .scalars()
            .all()
        )
    for agent_id in agents:
        with engine.db.engine.begin() as conn:
            pg_postings.compact(conn, agent_id, wait=True)
    return [f"compacted the packed postings of {len(agents)} agent(s)"] if agents else []
