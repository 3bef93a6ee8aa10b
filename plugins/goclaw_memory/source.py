"""The memory service's :class:`goclaw.contracts.search.IndexSource`: read-only access to the
chunk table and the agents' index version tokens, handed to the search backend
(:meth:`~goclaw.contracts.search.SearchBackend.open`) so a backend with an index of its own
catches up through the contract instead of reading this plugin's tables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from goclaw.contracts.search import ChunkFingerprint, ChunkRecord, Space
from goclaw_memory.index_writes import as_float32
from goclaw_memory.version_token import VERSION_WORKER, parse_token
from goclaw_search.tokenize import default_tokenizer

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

LOOKUP = 500
PG_BATCH = 5_000  # ids per query on PostgreSQL

_TOKEN = text("SELECT value FROM worker_state WHERE worker = :w AND scope = :s")
_PG_TOKEN = "SELECT value FROM worker_state WHERE worker = %s AND scope = %s"


def _space_params(space: Space | None) -> dict[str, Any]:
    provider, model, dim = space if space else ("", "", 0)
    return {"p": provider, "m": model, "d": dim}


class ChunkTableSource:
    """``memory_chunks`` and the version tokens in ``worker_state``, read-only."""

    def __init__(self, engine: Host) -> None:
        self.engine = engine

    def version(self, agent_id: str) -> str:
        if self.engine.db.backend == "postgresql":  # per search: one round trip, not three
            from goclaw_memory.pg_direct import direct

            rows = direct(self.engine).query(_PG_TOKEN, (VERSION_WORKER, agent_id))
            return parse_token(rows[0][0]) if rows else ""
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
        ids = [int(i) for i in ids]
        if self.engine.db.backend == "postgresql":
            yield from self._pg_records(agent_id, ids, space)
            return
        tokenize = default_tokenizer().terms
        with self.engine.db.engine.connect() as conn:
            for start in range(0, len(ids), LOOKUP):
                part = ids[start : start + LOOKUP]
                marks = ", ".join(f":i{k}" for k in range(len(part)))
                # ``agent_id || ''``: found by primary key, the agent only checked (a plain
                # ``agent_id =`` lets SQLite walk the agent's whole scope index instead).
                sql = text(
                    "SELECT id, user_id, path, start_line, end_line, text, chunk_hash, lex, "
                    "CASE WHEN embedding_provider = :p AND embedding_model = :m AND embedding_dim = :d "
                    f"THEN embedding END FROM memory_chunks WHERE id IN ({marks}) AND (agent_id || '') = :a"
                )
                params = {f"i{k}": v for k, v in enumerate(part)} | _space_params(space) | {"a": agent_id}
                for r in conn.execute(sql, params):
                    yield _record(r, space, tokenize)

    def _pg_records(self, agent_id: str, ids: list[int], space: Space | None) -> Iterator[ChunkRecord]:
        """PostgreSQL: one query per :data:`PG_BATCH` ids (``id = ANY(array)``) on a binary
        cursor; each batch's vectors decoded from pgvector's binary form by one numpy call. A
        first build of 100k chunks read ``embedding::text`` and parsed it as JSON: 8.2 s of its
        12 s, against ~2.5 s for everything here."""
        tokenize = default_tokenizer().terms
        sql = (
            "SELECT id, user_id, path, start_line, end_line, text, chunk_hash, lex, "
            "CASE WHEN embedding_provider = %(p)s AND embedding_model = %(m)s "
            "AND embedding_dim = %(d)s THEN embedding END "
            "FROM memory_chunks WHERE id = ANY(%(ids)s) AND agent_id = %(a)s"
        )
        with self.engine.db.engine.connect() as conn:
            raw = conn.connection.driver_connection
            assert raw is not None
            with raw.cursor(binary=True) as cur:
                _raw_vectors(cur)
                for start in range(0, len(ids), PG_BATCH):
                    params = {"ids": ids[start : start + PG_BATCH], "a": agent_id} | _space_params(space)
                    cur.execute(sql, params)
                    rows = cur.fetchall()
                    vectors = pg_vectors([r[8] for r in rows]) if space is not None else [None] * len(rows)
                    for r, vec in zip(rows, vectors, strict=True):
                        yield _record(r, space, tokenize, vec)
            raw.rollback()


def _record(
    r: Sequence[Any], space: Space | None, tokenize: Callable[[str], list[str]], vec: Any = None
) -> ChunkRecord:
    if vec is None and space is not None:
        vec = as_float32(r[8])
    return ChunkRecord(
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


def pg_vectors(raw: Sequence[bytes | None]) -> list[Any]:
    """pgvector's binary form (uint16 dimension, uint16 unused, then big-endian float32s) to
    native float32 arrays: one ``frombuffer`` for a batch of equal lengths (rows of one array),
    else one per vector; ``None`` stays ``None``."""
    import numpy as np

    out: list[Any] = [None] * len(raw)
    present = [i for i, b in enumerate(raw) if b is not None]
    sizes = {len(raw[i] or b"") for i in present}
    if len(sizes) == 1 and (size := sizes.pop()) > 4 and size % 4 == 0:
        block = np.frombuffer(b"".join(raw[i] or b"" for i in present), dtype=">f4")
        rows = block.reshape(len(present), size // 4)[:, 1:].astype(np.float32)
        for k, i in enumerate(present):
            out[i] = rows[k]
        return out
    for i in present:
        out[i] = np.frombuffer(raw[i] or b"", dtype=">f4", offset=4).astype(np.float32)
    return out


def _raw_vectors(cur: Any) -> None:
    """Load ``vector`` values on ``cur`` as their raw binary form (decoded by
    :func:`pg_vectors`), not as pgvector ``Vector`` objects one at a time."""
    from psycopg.adapt import Loader
    from psycopg.pq import Format

    info = cur.adapters.types.get("vector")
    oid = info.oid if info is not None else cur.execute("SELECT 'vector'::regtype::oid").fetchone()[0]

    class _RawLoader(Loader):
        format = Format.BINARY

        def load(self, data: Any) -> bytes:
            return bytes(data)

    cur.adapters.register_loader(int(oid), _RawLoader)
