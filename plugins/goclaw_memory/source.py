"""The memory service's :class:`goclaw.contracts.search.IndexSource`: read-only access to the
chunk table and the agents' index version tokens, handed to the search backend
(:meth:`~goclaw.contracts.search.SearchBackend.open`) so a backend with an index of its own
catches up through the contract instead of reading this plugin's tables (issue 13 item 1).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from goclaw.contracts.search import ChunkFingerprint, ChunkRecord, Space
from goclaw.retrieval.tokenize import default_tokenizer
from goclaw_memory.index_writes import as_float32
from goclaw_memory.sqlite_backend import VERSION_WORKER, parse_token

if TYPE_CHECKING:
    from goclaw.engine import Engine

LOOKUP = 500

_TOKEN = text("SELECT value FROM worker_state WHERE worker = :w AND scope = :s")


def _space_params(space: Space | None) -> dict[str, Any]:
    provider, model, dim = space if space else ("", "", 0)
    return {"p": provider, "m": model, "d": dim}


class ChunkTableSource:
    """``memory_chunks`` and the version tokens in ``worker_state``, read-only."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def version(self, agent_id: str) -> str:
        with self.engine.db.engine.connect() as conn:
            row = conn.execute(_TOKEN, {"w": VERSION_WORKER, "s": agent_id}).first()
        return "" if row is None else parse_token(row[0])

    def fingerprints(self, agent_id: str, space: Space | None) -> dict[int, ChunkFingerprint]:
        sql = text(
            "SELECT id, chunk_hash, user_id, path, start_line, (embedding IS NOT NULL AND "
            "embedding_provider = :p AND embedding_model = :m AND embedding_dim = :d) "
            "FROM memory_chunks WHERE agent_id = :a"
        )
        with self.engine.db.engine.connect() as conn:
            rows = conn.execute(sql, {"a": agent_id, **_space_params(space)}).all()
        return {
            int(r[0]): ChunkFingerprint(r[1] or "", r[2] or "", r[3] or "", int(r[4]), bool(r[5]))
            for r in rows
        }

    def records(self, agent_id: str, ids: Sequence[int], space: Space | None) -> Iterator[ChunkRecord]:
        emb = "embedding::text" if self.engine.db.backend == "postgresql" else "embedding"
        tokenize = default_tokenizer().terms
        ids = [int(i) for i in ids]
        with self.engine.db.engine.connect() as conn:
            for start in range(0, len(ids), LOOKUP):
                part = ids[start : start + LOOKUP]
                marks = ", ".join(f":i{k}" for k in range(len(part)))
                # ``agent_id || ''``: found by primary key, the agent only checked (a plain
                # ``agent_id =`` lets SQLite walk the agent's whole scope index instead).
                sql = text(
                    "SELECT id, user_id, path, start_line, end_line, text, chunk_hash, lex, "
                    "CASE WHEN embedding_provider = :p AND embedding_model = :m AND embedding_dim = :d "
                    f"THEN {emb} END FROM memory_chunks WHERE id IN ({marks}) AND (agent_id || '') = :a"
                )
                params = {f"i{k}": v for k, v in enumerate(part)} | _space_params(space) | {"a": agent_id}
                for r in conn.execute(sql, params):
                    vec = as_float32(r[8]) if space is not None else None
                    yield ChunkRecord(
                        int(r[0]),
                        r[1] or "",
                        r[2] or "",
                        int(r[3]),
                        int(r[4]),
                        r[5] or "",
                        r[6] or "",
                        r[7].split() if r[7] is not None else tokenize(r[5] or ""),
                        space if vec is not None else None,
                        vec,
                    )
