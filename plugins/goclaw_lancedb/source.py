"""What the LanceDB backend reads from the workspace database, and only to catch up.

The search contract hands a backend every write of an indexing run
(:meth:`~goclaw.contracts.search.SearchBackend.apply_changes`), so in steady state the backend
never reads the chunk table. It does read it when its own table is behind the database (the
plugin was disabled while indexing ran, a process died between the database commit and
``apply_changes``, ``forget`` or ``repair`` changed rows directly): then the difference is
fetched from ``memory_chunks`` by fingerprint.

Two things here are not in the contract (see the plugin's README section in docs/memory.md):
the memory service's index version token (``worker_state``, worker ``goclaw.memory.index``,
replaced by every indexing transaction) and the chunk table's layout.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import text

from goclaw.contracts.search import ChunkRecord, Space

if TYPE_CHECKING:
    from goclaw.engine import Engine

VERSION_WORKER = "goclaw.memory.index"  # the memory service's token row (worker_state)
LOOKUP = 500

Fingerprint = tuple[str, str, str, int, bool]  # (chunk hash, user, path, start line, has vector)

_TOKEN = text("SELECT value FROM worker_state WHERE worker = :w AND scope = :s")


def db_token(engine: Engine, agent_id: str) -> str:
    """The agent's current index version token ("" before its first index run)."""
    with engine.db.engine.connect() as conn:
        row = conn.execute(_TOKEN, {"w": VERSION_WORKER, "s": agent_id}).first()
    if row is None:
        return ""
    value = row[0]
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return str(value.get("token", "")) if isinstance(value, dict) else str(value or "")


def _space_params(space: Space | None) -> dict[str, Any]:
    provider, model, dim = space if space else ("", "", 0)
    return {"p": provider, "m": model, "d": dim}


def fingerprints(engine: Engine, agent_id: str, space: Space | None) -> dict[int, Fingerprint]:
    """Per chunk id of the agent: what the LanceDB table must hold for it."""
    sql = text(
        "SELECT id, chunk_hash, user_id, path, start_line, (embedding IS NOT NULL AND "
        "embedding_provider = :p AND embedding_model = :m AND embedding_dim = :d) "
        "FROM memory_chunks WHERE agent_id = :a"
    )
    with engine.db.engine.connect() as conn:
        rows = conn.execute(sql, {"a": agent_id, **_space_params(space)}).all()
    return {int(r[0]): (r[1] or "", r[2] or "", r[3] or "", int(r[4]), bool(r[5])) for r in rows}


def as_vector(value: Any) -> Any:
    """A stored embedding (SQLite: float32 bytes; PostgreSQL: pgvector's value) as float32."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(value), dtype=np.float32)
    if isinstance(value, str):
        return np.asarray(json.loads(value), dtype=np.float32)
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32).reshape(-1)


def records(engine: Engine, ids: Sequence[int], space: Space | None, tokenize: Any) -> Iterator[ChunkRecord]:
    """The chunks with these ids as the indexer wrote them (vector only in ``space``)."""
    pg = engine.db.backend == "postgresql"
    emb = "embedding::text" if pg else "embedding"
    ids = list(ids)
    with engine.db.engine.connect() as conn:
        for start in range(0, len(ids), LOOKUP):
            part = ids[start : start + LOOKUP]
            marks = ", ".join(f":i{k}" for k in range(len(part)))
            sql = text(
                "SELECT id, user_id, path, start_line, end_line, text, chunk_hash, lex, "
                f"CASE WHEN embedding_provider = :p AND embedding_model = :m AND embedding_dim = :d "
                f"THEN {emb} END FROM memory_chunks WHERE id IN ({marks})"
            )
            params = {f"i{k}": v for k, v in enumerate(part)} | _space_params(space)
            for r in conn.execute(sql, params):
                vec = as_vector(r[8]) if space is not None else None
                terms = r[7].split() if r[7] is not None else tokenize(r[5] or "")
                yield ChunkRecord(
                    int(r[0]),
                    r[1] or "",
                    r[2] or "",
                    int(r[3]),
                    int(r[4]),
                    r[5] or "",
                    r[6] or "",
                    terms,
                    space if vec is not None else None,
                    vec,
                )
