"""The SQL of memory indexing: rows of ``memory_documents`` / ``memory_chunks`` and the agent's
index version token.

Plain SQL with ``executemany`` straight to the driver, the same text on SQLite and PostgreSQL
(``?`` placeholders, :func:`driver_sql`): the ORM's per-statement and SQLAlchemy's per-row
parameter processing would be most of the indexing time. Every function runs inside the caller's
write transaction.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Callable, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select, text

from goclaw.contracts.columns import utcnow
from goclaw.contracts.search import ChunkRecord
from goclaw.contracts.store import WorkerState
from goclaw_memory.tables import MemoryChunk, MemoryDocument
from goclaw_memory.version_token import VERSION_WORKER, parse_token
from goclaw_memory.write_behind import WRITER_THREAD
from goclaw_search.tokenize import lex_of

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from goclaw_memory.chunking import TextChunk
    from goclaw_memory.index_scan import Pending

DOCS = MemoryDocument.__table__
CHUNKS = MemoryChunk.__table__
STATE = WorkerState.__table__

LOOKUP_CHUNK = 500  # ids / hashes / paths per IN (...) lookup
_VALUES = re.compile(r"VALUES (\((?:\?, )*\?\))")

# Same text on SQLite (>= 3.24) and PostgreSQL (``?`` becomes ``%s``: :func:`driver_sql`).
_SQL_UPSERT_DOC = (
    "INSERT INTO memory_documents (agent_id, user_id, path, content_hash, size, mtime, chunk_count, "
    "indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (agent_id, user_id, path) DO UPDATE "
    "SET content_hash = excluded.content_hash, size = excluded.size, mtime = excluded.mtime, "
    "chunk_count = excluded.chunk_count, indexed_at = excluded.indexed_at"
)
_SQL_INSERT_CHUNK = (
    "INSERT INTO memory_chunks (document_id, agent_id, user_id, path, start_line, end_line, text, lex, "
    "chunk_hash, embedding, embedding_provider, embedding_model, embedding_dim) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SQL_INSERT_CHUNK_ID = _SQL_INSERT_CHUNK.replace("(document_id", "(id, document_id").replace("(?", "(?, ?")
_SQL_INSERT_CHUNK_PG = _SQL_INSERT_CHUNK.replace("?, ?, ?, ?)", "CAST(? AS vector), ?, ?, ?)")
PG_ROWS_PER_INSERT = 1_000  # 13 parameters a row: within PostgreSQL's 65,535 a statement


def refused(exc: BaseException) -> bool:
    """Whether a write failed because of one file's data (skip it) rather than the database
    itself being unusable (raise)."""
    from sqlalchemy.exc import DataError

    from goclaw.errors import StoreError

    if isinstance(exc, StoreError):
        return isinstance(exc.__cause__, DataError)
    return isinstance(exc, (ValueError, UnicodeError))


def reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}"


def as_float32(vec: Any) -> Any:
    """A vector as a float32 array: the raw float32 bytes of a SQLite column (the embedding
    cache's, the chunks'), pgvector's text form (``embedding::text``), an array or a list."""
    import numpy as np

    if vec is None:
        return None
    if isinstance(vec, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(vec), dtype=np.float32)
    if isinstance(vec, str):
        return np.asarray(json.loads(vec), dtype=np.float32)
    if hasattr(vec, "to_numpy"):
        vec = vec.to_numpy()
    return np.asarray(vec, dtype=np.float32).reshape(-1)


def float32_row(vec: Any) -> bool:
    """Whether ``vec`` is already a one-dimensional float32 array (nothing to convert)."""
    import numpy as np

    return type(vec) is np.ndarray and vec.dtype == np.float32 and vec.ndim == 1


def float32_rows(vectors: Sequence[Any]) -> list[Any]:
    """:func:`as_float32` of each vector (None stays None). The float32 bytes of a SQLite
    column, all of one size, are viewed as rows of one array: one conversion, not one a row."""
    import numpy as np

    raw = [v for v in vectors if v is not None]
    if all(map(float32_row, raw)):
        return list(vectors)  # float32 rows already (the cache's, :func:`_packed`): as they are
    if (
        raw
        and all(isinstance(v, bytes) for v in raw)
        and len({len(v) for v in raw}) == 1
        and len(raw[0]) % 4 == 0
    ):
        matrix = np.frombuffer(b"".join(raw), dtype=np.float32).reshape(len(raw), -1)
        rows = iter(matrix)
        return [None if v is None else next(rows) for v in vectors]
    return [None if v is None else as_float32(v) for v in vectors]


def vector_param(pg: bool) -> Callable[[Any], Any]:
    """How a vector travels as a parameter in plain SQL: float32 bytes (SQLite; the cache's
    bytes and flat float32 rows pass through untouched, sqlite3 binds a row's buffer) or a
    float32 array, which the store's connections send in pgvector's binary form (PostgreSQL)."""
    if pg:
        return lambda vec: None if vec is None else as_float32(vec)

    def param(vec: Any) -> Any:
        if vec is None or isinstance(vec, bytes):
            return vec
        if float32_row(vec) and vec.flags.c_contiguous:
            return vec  # bound as a blob through the buffer protocol: no bytes copy
        return as_float32(vec).tobytes()

    return param


def driver_sql(sql: str, pg: bool) -> str:
    """``?`` placeholders (sqlite3's qmark style) as psycopg's ``%s``."""
    return sql.replace("?", "%s") if pg else sql


def marks(n: int) -> str:
    return ", ".join("?" * n)


def dialect_insert(session: Session, table: Any) -> Any:
    """The dialect's INSERT (with ON CONFLICT); the dialect module loads on first use, since
    SQLAlchemy's PostgreSQL dialect costs every SQLite process ~20 ms to import."""
    from sqlalchemy.dialects import postgresql, sqlite

    dialect = session.get_bind().dialect.name
    return (postgresql.insert if dialect == "postgresql" else sqlite.insert)(table)


def bump_version(session: Session, agent_id: str) -> tuple[str, str]:
    """Give the agent's index a new version token (read by the vector matrix cache); returns
    ``(previous token, new token)``. Writers are serialised, so a run whose writes chain
    (each one's previous token is the last one's new token) saw no other writer."""
    row = (
        session.connection()
        .execute(
            text("SELECT value FROM worker_state WHERE worker = :w AND scope = :s"),
            {"w": VERSION_WORKER, "s": agent_id},
        )
        .first()
    )
    prev = parse_token(row[0]) if row is not None else ""
    token = uuid.uuid4().hex
    stmt = dialect_insert(session, STATE).values(
        worker=VERSION_WORKER, scope=agent_id, value={"token": token}, updated_at=utcnow()
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=[STATE.c.worker, STATE.c.scope],
        set_={"value": {"token": token}, "updated_at": utcnow()},
    )
    session.execute(stmt)
    return prev, token


def chunk_ids(conn: Any, doc_ids: Sequence[int]) -> list[tuple[int, str, str]]:
    """``(id, user_id, chunk_hash)`` of the chunks of these documents."""
    out: list[tuple[int, str, str]] = []
    cols = (CHUNKS.c.id, CHUNKS.c.user_id, CHUNKS.c.chunk_hash)
    for i in range(0, len(doc_ids), LOOKUP_CHUNK):
        part = list(doc_ids[i : i + LOOKUP_CHUNK])
        rows = conn.execute(select(*cols).where(CHUNKS.c.document_id.in_(part)))
        out.extend((int(r[0]), r[1], r[2]) for r in rows)
    return out


def replace_documents(
    session: Session,
    agent_id: str,
    batch: Sequence[Pending],
    terms: Sequence[Sequence[Sequence[str]]],
    vectors: dict[str, Any],
    space: tuple[str, str, int] | None,
    track: bool,
) -> tuple[tuple[str, str], list[int], list[ChunkRecord]]:
    """Replace the chunks of every document in ``batch`` (one transaction, the caller's); returns
    the version tokens (before, after) and, when ``track``, the chunk ids removed and the
    records written."""
    pg = session.get_bind().dialect.name == "postgresql"
    conn = session.connection()
    ids = upsert_documents(conn, agent_id, batch, pg)
    doc_ids = list(ids.values())
    removed = [r[0] for r in chunk_ids(conn, doc_ids)] if track else []
    delete_chunks(conn, doc_ids)
    new_ids = insert_chunks(conn, agent_id, batch, ids, terms, vectors, space, pg)
    added = written_records(conn, batch, doc_ids, terms, vectors, space, new_ids) if track else []
    return bump_version(session, agent_id), removed, added


def delete_chunks(conn: Any, doc_ids: Sequence[int]) -> None:
    """Delete the chunks of these documents."""
    for i in range(0, len(doc_ids), LOOKUP_CHUNK):
        conn.execute(delete(CHUNKS).where(CHUNKS.c.document_id.in_(list(doc_ids[i : i + LOOKUP_CHUNK]))))


def upsert_documents(
    conn: Any, agent_id: str, batch: Sequence[Pending], pg: bool
) -> dict[tuple[str, str], int]:
    """Insert or update the batch's ``memory_documents`` rows; their ids by (user, path)."""
    now = utcnow()
    stamp = now if pg else now.replace(tzinfo=None).isoformat(sep=" ")
    rows = [
        (agent_id, p.file.user_id, p.file.path, p.hash, p.size, p.mtime, len(p.chunks), stamp) for p in batch
    ]
    if pg:
        conn.exec_driver_sql(driver_sql(_SQL_UPSERT_DOC, pg), rows)
    else:
        insert_many(conn, _SQL_UPSERT_DOC, rows)
    wanted = {(p.file.user_id, p.file.path) for p in batch}
    ids: dict[tuple[str, str], int] = {}
    paths = sorted({p.file.path for p in batch})
    for i in range(0, len(paths), LOOKUP_CHUNK):
        part = paths[i : i + LOOKUP_CHUNK]
        where = f"agent_id = ? AND path IN ({marks(len(part))})"
        sql = f"SELECT id, user_id, path FROM memory_documents WHERE {where}"
        for r in conn.exec_driver_sql(driver_sql(sql, pg), (agent_id, *part)):
            if (r[1], r[2]) in wanted:
                ids[(r[1], r[2])] = int(r[0])
    return ids


def insert_chunks(
    conn: Any,
    agent_id: str,
    batch: Sequence[Pending],
    ids: dict[tuple[str, str], int],
    terms: Sequence[Sequence[Sequence[str]]],
    vectors: dict[str, Any],
    space: tuple[str, str, int] | None,
    pg: bool,
) -> list[int] | None:
    """Insert the batch's chunks (text, terms, vector). On SQLite the ids are given here, the
    ones SQLite would pick (the largest + 1, in order; the write lock is held), and returned
    in the batch's order, so nothing needs reading back; on PostgreSQL the sequence gives them
    (None)."""
    vec = vector_param(pg)
    ep, em, ed = space if space is not None else (None, None, None)
    rows = []
    for p, lexes in zip(batch, terms, strict=True):
        user, path = p.file.user_id, p.file.path
        doc_id = ids[(user, path)]
        for c, lex in zip(p.chunks, lexes, strict=True):
            v = vectors.get(c.hash) if space is not None else None
            meta = (ep, em, ed) if v is not None else (None, None, None)
            rows.append(
                (
                    doc_id,
                    agent_id,
                    user,
                    path,
                    c.start_line,
                    c.end_line,
                    c.text,
                    lex_of(lex),
                    c.hash,
                    vec(v),
                    *meta,
                )
            )
    if pg:
        # Multi-row statements: the statistics triggers (goclaw_memory.pg_stats) fire once a
        # statement and append a row per term it wrote; one statement a chunk would append
        # every common term once per chunk.
        head, group = _SQL_INSERT_CHUNK_PG.split(" VALUES ")
        for lo in range(0, len(rows), PG_ROWS_PER_INSERT):
            part = rows[lo : lo + PG_ROWS_PER_INSERT]
            sql = f"{head} VALUES {', '.join([group] * len(part))}"
            conn.exec_driver_sql(driver_sql(sql, True), tuple(chain.from_iterable(part)))
        return None
    first = int(conn.exec_driver_sql("SELECT COALESCE(MAX(id), 0) FROM memory_chunks").scalar()) + 1
    new_ids = list(range(first, first + len(rows)))
    insert_many(conn, _SQL_INSERT_CHUNK_ID, [(i, *r) for i, r in zip(new_ids, rows, strict=True)])
    return new_ids


def _rows_per_statement(width: int, conn: Any = None) -> int:
    """Rows of ``width`` parameters per multi-row ``INSERT``: within the connection's own
    parameter limit (a build option: 32,766 by default since SQLite 3.32, 999 before and in
    builds that keep it); from the version when the connection cannot say."""
    import sqlite3

    limit = 32_766 if sqlite3.sqlite_version_info >= (3, 32, 0) else 999
    raw = getattr(getattr(conn, "connection", None), "driver_connection", None)
    if isinstance(raw, sqlite3.Connection):
        limit = raw.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    return max(1, min(2_000, limit // width))


def insert_many(
    conn: Any, sql: str, rows: Sequence[tuple[Any, ...]], *, multi_row: bool | None = None
) -> None:
    """``executemany(sql, rows)`` on SQLite, on the index writer thread as multi-row
    ``INSERT ... VALUES (...), (...)`` statements (``sql`` has one ``VALUES (?, ...)`` group),
    each up to :func:`_rows_per_statement` rows: the same rows in the same order. sqlite3
    releases the GIL for each step of a statement and takes it back for the next row's
    parameters, so with ``executemany`` a writer thread waits for the GIL once a row (up to the
    interpreter's 5 ms switch interval while the other thread tokenizes); a statement of 2,000
    rows waits once. In the caller's own thread ``executemany`` stays (compiling the long
    statements costs ~25 % more CPU than reusing one). ``multi_row`` forces either."""
    if multi_row is None:
        multi_row = threading.current_thread().name == WRITER_THREAD
    if not multi_row:
        if rows:
            conn.exec_driver_sql(sql, rows)
        return
    if not rows:
        return
    group = _VALUES.search(sql)
    if group is None:
        raise ValueError(f"no VALUES (?, ...) group in {sql!r}")
    step = _rows_per_statement(len(rows[0]), conn)
    for lo in range(0, len(rows), step):
        part = rows[lo : lo + step]
        statement = sql[: group.start(1)] + ", ".join([group.group(1)] * len(part)) + sql[group.end(1) :]
        conn.exec_driver_sql(statement, tuple(chain.from_iterable(part)))


def written_records(
    conn: Any,
    batch: Sequence[Pending],
    doc_ids: Sequence[int],
    terms: Sequence[Sequence[Sequence[str]]],
    vectors: dict[str, Any],
    space: tuple[str, str, int] | None,
    new_ids: list[int] | None,
) -> list[ChunkRecord]:
    """The batch's chunks as written, with their ids (for the backend's own index)."""
    written = [
        (p.file.user_id, p.file.path, c, lex)
        for p, lexes in zip(batch, terms, strict=True)
        for c, lex in zip(p.chunks, lexes, strict=True)
    ]
    if new_ids is None:
        new_ids = _read_back_ids(conn, written, doc_ids)
    found = [vectors.get(c.hash) for _u, _p, c, _l in written] if space is not None else [None] * len(written)
    out = []
    for cid, (user, path, c, lex), vector in zip(new_ids, written, float32_rows(found), strict=True):
        rec = ChunkRecord(
            cid,
            user,
            path,
            c.start_line,
            c.end_line,
            c.text,
            c.hash,
            lex,
            space if vector is not None else None,
            vector,
        )
        out.append(rec)
    return out


def _read_back_ids(
    conn: Any, written: Sequence[tuple[str, str, TextChunk, Sequence[str]]], doc_ids: Sequence[int]
) -> list[int]:
    """The ids the database gave the chunks just inserted, in ``written``'s order. A chunk is
    found by (user, path, start line, hash): the pieces of one long line share a start line."""
    by_key: dict[tuple[str, str, int, str], list[int]] = {}
    cols = (CHUNKS.c.id, CHUNKS.c.user_id, CHUNKS.c.path, CHUNKS.c.start_line, CHUNKS.c.chunk_hash)
    for i in range(0, len(doc_ids), LOOKUP_CHUNK):
        part = list(doc_ids[i : i + LOOKUP_CHUNK])
        for r in conn.execute(select(*cols).where(CHUNKS.c.document_id.in_(part)).order_by(CHUNKS.c.id)):
            by_key.setdefault((r[1], r[2], int(r[3]), r[4]), []).append(int(r[0]))
    return [by_key[(user, path, c.start_line, c.hash)].pop(0) for user, path, c, _lex in written]
