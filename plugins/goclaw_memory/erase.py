"""What ``goclaw forget`` erases of the memory plugin's rows (``goclaw_forget_rows``).

A user of some agents (or whole agents): their chunks and documents, the cached embeddings
whose text only those chunks had (another scope's identical text keeps its cache row), and
their sessions with the messages and the per-session worker state (scoped by session key). The
files themselves are the kernel's ``forget`` business; once the rows are gone,
:func:`forgotten` (``goclaw_forgotten``) settles the search backends.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import not_, select, text

from goclaw.contracts.schema import ForgetScope, ForgetStep
from goclaw.contracts.store import EmbeddingCache, WorkerState
from goclaw_memory.pg_sketches import ORPHANS
from goclaw_memory.tables import MemoryChunk, MemoryDocument, Session, SessionMessage


def _mine(table: Any, scope: ForgetScope) -> Any:
    return scope.clause(table)


def _cache_hashes(connection: Any, scope: ForgetScope) -> list[str]:
    """Hashes of the scope's chunks that no other scope's chunk has."""
    c = MemoryChunk.__table__
    mine = _mine(c, scope)
    own = {r[0] for r in connection.execute(select(c.c.chunk_hash).where(mine).distinct())}
    if not own:
        return []
    shared = {
        r[0]
        for r in connection.execute(
            select(c.c.chunk_hash).where(not_(mine), c.c.chunk_hash.in_(sorted(own))).distinct()
        )
    }
    return sorted(own - shared)


def forget_steps(scope: ForgetScope, connection: Any) -> list[ForgetStep]:
    chunks, docs, cache = MemoryChunk.__table__, MemoryDocument.__table__, EmbeddingCache.__table__
    hashes = _cache_hashes(connection, scope)
    s, msg, ws = Session.__table__, SessionMessage.__table__, WorkerState.__table__
    keys = s.select().with_only_columns(s.c.key).where(scope.clause(s)).scalar_subquery()
    return [
        ForgetStep(msg, msg.c.session_key.in_(keys)),
        ForgetStep(ws, ws.c.scope.in_(keys)),
        ForgetStep(s, scope.clause(s)),
        ForgetStep(chunks, _mine(chunks, scope)),
        ForgetStep(docs, _mine(docs, scope)),
        ForgetStep(cache, cache.c.chunk_hash.in_(hashes)),
    ]


def forgotten(engine: Any, scope: ForgetScope) -> None:
    """After ``goclaw forget`` erased ``scope``'s rows: each agent that keeps its other rows gets
    a new index version (a backend in any process sees its index is behind and catches up from
    the chunk table), and this engine's backend drops what it held of the erased rows."""
    from goclaw_memory.index_writes import bump_version

    if not scope.whole_agent:
        with engine.db.write() as session:
            for agent_id in scope.agent_ids:
                bump_version(session, agent_id)
    for agent_id in scope.agent_ids:
        engine.memory.invalidate(agent_id)
        if engine.db.backend == "postgresql":  # no term of the erased text stays in the statistics
            from goclaw_memory.pg_postings import compact
            from goclaw_memory.pg_stats import fold

            fold(engine, agent_id)
            with engine.db.engine.begin() as c:  # nor in the postings or their tombstones
                compact(c, agent_id, wait=True)
                # nor in passage sketches (the statistics trigger deletes a deleted chunk's;
                # these are any a database without the trigger kept)
                c.execute(text(ORPHANS), {"a": agent_id})
