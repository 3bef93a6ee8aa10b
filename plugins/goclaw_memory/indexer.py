"""The memory indexing pipeline (spec §14, DECISIONS.md "re-index").

For each scope (agent level and every ``users/<U>/`` folder): list the memory files, hash each
one (SHA-256, first 16 bytes) and skip it when the hash is unchanged; otherwise re-chunk it,
embed the chunks whose text is not already in ``embedding_cache`` for this
(provider, model), and replace the document's chunks. Files gone from disk leave the index.

Crash safety: a document's old chunks are deleted and its new chunks inserted in the same
transaction (several small documents may share one transaction, each still all-or-nothing),
so a process killed at any point leaves every document either fully old or fully new, the
index searchable, and the next run finishes the job (the hash skip makes it cheap).

Every transaction that changes an agent's chunks also replaces the agent's index version token
(``worker_state``), which is how other processes' in-memory vector matrices notice.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select, text
from sqlalchemy.dialects import postgresql, sqlite

from goclaw.contracts.search import ChunkRecord, IndexChanges, SearchBackend
from goclaw.retrieval.tokenize import default_tokenizer
from goclaw.store.models import EmbeddingCache, WorkerState
from goclaw.store.types import utcnow
from goclaw_memory.chunking import TextChunk, chunk_text, content_hash
from goclaw_memory.paths import MemoryFile, scope_files, user_ids
from goclaw_memory.sqlite_backend import VERSION_WORKER, parse_token
from goclaw_memory.tables import MemoryChunk, MemoryDocument

if TYPE_CHECKING:
    from pathlib import Path

    from sqlalchemy.orm import Session

    from goclaw.engine import Engine
    from goclaw.store.models import Agent
    from goclaw.types import EmbeddingProvider

DOCS = MemoryDocument.__table__
CHUNKS = MemoryChunk.__table__
CACHE = EmbeddingCache.__table__
STATE = WorkerState.__table__

Progress = Callable[[str, int, int], None]

BATCH_DOCS = 200  # documents per transaction at most
MAX_PATH = 1024  # memory_documents.path / memory_chunks.path are VARCHAR(1024)
BATCH_CHUNKS = 2000  # chunks per transaction at most
LOOKUP_CHUNK = 500  # hashes per IN (...) lookup

# Same text on SQLite (>= 3.24) and PostgreSQL (``?`` becomes ``%s``: :func:`_driver_sql`).
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


@dataclass
class IndexReport:
    """What one ``index`` run did (the CLI's summary)."""

    agent: str
    files_scanned: int = 0
    skipped_unchanged: int = 0
    rechunked: int = 0
    removed: int = 0
    chunks_written: int = 0
    chunks_embedded: int = 0
    cache_hits: int = 0
    reembedded: int = 0
    embedding: str | None = None  # "provider/model (dim)" or None
    embedding_error: str | None = None
    seconds: float = 0.0
    changed_paths: list[str] = field(default_factory=list)
    # Files that cannot be indexed, each {"path", "reason"}: reported, never fatal (issue 12).
    skipped_files: list[dict[str, str]] = field(default_factory=list)

    def skip(self, path: str, reason: str) -> None:
        self.skipped_files.append({"path": printable_path(path), "reason": reason})

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def merge(self, other: IndexReport) -> None:
        for name in (
            "files_scanned",
            "skipped_unchanged",
            "rechunked",
            "removed",
            "chunks_written",
            "chunks_embedded",
            "cache_hits",
            "reembedded",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.changed_paths.extend(other.changed_paths)
        self.skipped_files.extend(other.skipped_files)
        self.embedding = self.embedding or other.embedding
        self.embedding_error = self.embedding_error or other.embedding_error


@dataclass
class _Pending:
    file: MemoryFile
    text: str
    hash: str
    size: int
    mtime: float
    chunks: list[TextChunk]


def printable_path(path: str) -> str:
    """A path as text that can be printed and stored: an undecodable byte of a file name (kept
    by Python as a lone surrogate) shows as ``\\xNN``."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _unindexable_name(path: str) -> str | None:
    """Why a file's path cannot be a row in the index, or None."""
    if printable_path(path) != path:
        return "file name is not valid UTF-8"
    if len(path) > MAX_PATH:
        return f"path longer than {MAX_PATH:,} characters"
    return None


def _refused(exc: BaseException) -> bool:
    """Whether a write failed because of one file's data (skip it) rather than the database
    itself being unusable (raise)."""
    from sqlalchemy.exc import DataError

    from goclaw.errors import StoreError

    if isinstance(exc, StoreError):
        return isinstance(exc.__cause__, DataError)
    return isinstance(exc, (ValueError, UnicodeError))


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}"


def _as_float32(vec: Any) -> Any:
    """A vector as a float32 array; on SQLite the embedding cache's vectors come as the raw
    float32 bytes of the column."""
    import numpy as np

    if isinstance(vec, bytes):
        return np.frombuffer(vec, dtype=np.float32)
    return np.asarray(vec, dtype=np.float32).reshape(-1)


def _vector_param(pg: bool) -> Callable[[Any], Any]:
    """How a vector travels as a parameter in plain SQL: float32 bytes (SQLite; the cache's
    bytes pass through untouched) or a float32 array, which the store's connections send in
    pgvector's binary form (PostgreSQL)."""
    if pg:
        return lambda vec: None if vec is None else _as_float32(vec)
    return lambda vec: vec if vec is None or isinstance(vec, bytes) else _as_float32(vec).tobytes()


def _driver_sql(sql: str, pg: bool) -> str:
    """``?`` placeholders (sqlite3's qmark style) as psycopg's ``%s``."""
    return sql.replace("?", "%s") if pg else sql


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def _insert(session: Session, table: Any) -> Any:
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
    stmt = _insert(session, STATE).values(
        worker=VERSION_WORKER, scope=agent_id, value={"token": token}, updated_at=utcnow()
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=[STATE.c.worker, STATE.c.scope],
        set_={"value": {"token": token}, "updated_at": utcnow()},
    )
    session.execute(stmt)
    return prev, token


@dataclass
class ChangeSet:
    """The chunk rows one index run removed and wrote (:class:`goclaw.contracts.search.IndexChanges`),
    for a backend that keeps an index of its own and patches it instead of reloading."""

    agent_id: str
    space: tuple[str, str, int] | None = None
    first: str | None = None  # index version token before the run's first write
    last: str | None = None  # ... and after its last one
    chained: bool = True  # False: another process wrote in between
    removed: set[int] = field(default_factory=set)
    records: dict[int, ChunkRecord] = field(default_factory=dict)

    def step(self, tokens: tuple[str, str]) -> None:
        prev, new = tokens
        if self.first is None:
            self.first = prev
        elif prev != self.last:
            self.chained = False
        self.last = new

    def remove(self, ids: Iterable[int]) -> None:
        for i in ids:
            self.records.pop(i, None)  # an id can be reused after its row is deleted
            self.removed.add(i)

    def add(self, records: Iterable[ChunkRecord]) -> None:
        for rec in records:
            self.records[rec.id] = rec

    def freeze(self) -> IndexChanges:
        """The run's changes as the search contract hands them to the backend."""
        before = self.first or ""
        after = self.last if self.last is not None else before
        return IndexChanges(
            self.agent_id,
            frozenset(self.removed),
            dict(self.records),
            self.space,
            before,
            after,
            self.chained,
        )


def _chunk_ids(conn: Any, doc_ids: Sequence[int]) -> list[tuple[int, str, str]]:
    """``(id, user_id, chunk_hash)`` of the chunks of these documents."""
    out: list[tuple[int, str, str]] = []
    cols = (CHUNKS.c.id, CHUNKS.c.user_id, CHUNKS.c.chunk_hash)
    for i in range(0, len(doc_ids), LOOKUP_CHUNK):
        part = list(doc_ids[i : i + LOOKUP_CHUNK])
        rows = conn.execute(select(*cols).where(CHUNKS.c.document_id.in_(part)))
        out.extend((int(r[0]), r[1], r[2]) for r in rows)
    return out


def _upsert_documents(
    conn: Any, agent_id: str, batch: Sequence[_Pending], pg: bool
) -> dict[tuple[str, str], int]:
    """Insert or update the batch's ``memory_documents`` rows; their ids by (user, path)."""
    now = utcnow()
    stamp = now if pg else now.replace(tzinfo=None).isoformat(sep=" ")
    rows = [
        (agent_id, p.file.user_id, p.file.path, p.hash, p.size, p.mtime, len(p.chunks), stamp) for p in batch
    ]
    conn.exec_driver_sql(_driver_sql(_SQL_UPSERT_DOC, pg), rows)
    wanted = {(p.file.user_id, p.file.path) for p in batch}
    ids: dict[tuple[str, str], int] = {}
    paths = sorted({p.file.path for p in batch})
    for i in range(0, len(paths), LOOKUP_CHUNK):
        part = paths[i : i + LOOKUP_CHUNK]
        marks = _marks(len(part))
        sql = f"SELECT id, user_id, path FROM memory_documents WHERE agent_id = ? AND path IN ({marks})"
        for r in conn.exec_driver_sql(_driver_sql(sql, pg), (agent_id, *part)):
            if (r[1], r[2]) in wanted:
                ids[(r[1], r[2])] = int(r[0])
    return ids


def _insert_chunks(
    conn: Any,
    agent_id: str,
    batch: Sequence[_Pending],
    ids: dict[tuple[str, str], int],
    terms: Sequence[Sequence[list[str]]],
    vectors: dict[str, Any],
    space: tuple[str, str, int] | None,
    pg: bool,
) -> list[int] | None:
    """Insert the batch's chunks (text, terms, vector). On SQLite the ids are given here, the
    ones SQLite would pick (the largest + 1, in order; the write lock is held), and returned
    in the batch's order, so nothing needs reading back; on PostgreSQL the sequence gives them
    (None)."""
    vec = _vector_param(pg)
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
                    " ".join(lex),
                    c.hash,
                    vec(v),
                    *meta,
                )
            )
    if pg:
        if rows:
            conn.exec_driver_sql(_driver_sql(_SQL_INSERT_CHUNK_PG, True), rows)
        return None
    first = int(conn.exec_driver_sql("SELECT COALESCE(MAX(id), 0) FROM memory_chunks").scalar()) + 1
    new_ids = list(range(first, first + len(rows)))
    if rows:
        conn.exec_driver_sql(_SQL_INSERT_CHUNK_ID, [(i, *r) for i, r in zip(new_ids, rows, strict=True)])
    return new_ids


def _written_records(
    conn: Any,
    batch: Sequence[_Pending],
    doc_ids: Sequence[int],
    terms: Sequence[Sequence[list[str]]],
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
    out = []
    for cid, (user, path, c, lex) in zip(new_ids, written, strict=True):
        v = vectors.get(c.hash) if space is not None else None
        vector = None if v is None else _as_float32(v)
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
    conn: Any, written: Sequence[tuple[str, str, TextChunk, list[str]]], doc_ids: Sequence[int]
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


class MemoryIndexer:
    """Indexes one agent's memory files into ``memory_documents`` / ``memory_chunks``."""

    def __init__(self, engine: Engine, backend: SearchBackend, *, max_chunk_len: int = 1000) -> None:
        self.engine = engine
        self.backend = backend
        self.max_chunk_len = max_chunk_len
        self._changes: ChangeSet | None = None

    # ------------------------------------------------------------------ entry point
    def index(
        self,
        agent: Agent,
        agent_dir: Path,
        scopes: Sequence[str] | None,
        embedder: EmbeddingProvider | None,
        *,
        embedder_error: str | None = None,
        progress: Progress | None = None,
    ) -> IndexReport:
        started = time.perf_counter()
        report = IndexReport(agent=agent.name, embedding_error=embedder_error)
        self._changes = ChangeSet(agent.id)
        if scopes is None:
            scopes = sorted({"", *user_ids(agent_dir), *self._indexed_users(agent.id)})
        space: tuple[str, str, int] | None = None
        if embedder is not None:
            try:
                space = (embedder.provider, embedder.model, int(embedder.dim))
                self._changes.space = space
                report.embedding = f"{space[0]}/{space[1]} ({space[2]}-d)"
                self.backend.prepare_vectors(space[2])
            except Exception as exc:
                report.embedding_error = f"{type(exc).__name__}: {exc}"
                embedder, space = None, None

        existing = self._existing_docs(agent.id, scopes)
        pending: list[_Pending] = []
        seen: set[tuple[str, str]] = set()
        for scope in scopes:
            for f in scope_files(agent_dir, scope):
                report.files_scanned += 1
                bad_name = _unindexable_name(f.path)
                if bad_name is not None:
                    report.skip(f.path, bad_name)
                    continue
                seen.add((f.user_id, f.path))
                try:
                    with open(f.abs, "rb") as fh:
                        raw = fh.read()
                        stat = os.fstat(fh.fileno())
                except OSError:
                    continue  # vanished or unreadable between listing and reading
                if b"\x00" in raw:  # PostgreSQL's text refuses NUL; same rule on SQLite
                    report.skip(f.path, "contains NUL bytes (not a text file)")
                    continue
                text = raw.decode("utf-8", errors="replace")
                digest = content_hash(text)
                old = existing.get((f.user_id, f.path))
                if old is not None and old[1] == digest:
                    report.skipped_unchanged += 1
                    continue
                pending.append(_Pending(f, text, digest, stat.st_size, stat.st_mtime, []))
        removed = [(key, doc[0]) for key, doc in existing.items() if key not in seen]

        total = len(pending)
        if progress:
            progress("index", 0, total)
        done = 0
        for batch in self._batches(pending):
            for p in batch:
                p.chunks = chunk_text(p.text, self.max_chunk_len)
            vectors = self._vectors_for([c for p in batch for c in p.chunks], embedder, space, report)
            self._write_each(agent.id, batch, vectors, space, report)
            done += len(batch)
            if progress:
                progress("index", done, total)
        if removed:
            self._remove(agent.id, [doc_id for _key, doc_id in removed])
            report.removed = len(removed)
            report.changed_paths.extend(key[1] for key, _ in removed)
        if embedder is not None and space is not None:
            self._reembed(agent.id, scopes, embedder, space, report, progress)
        if self.engine.db.backend == "postgresql" and report.chunks_written + report.reembedded >= 500:
            # Fresh statistics after a bulk load, so the planner picks the HNSW / GIN indexes
            # instead of trusting an empty-table estimate (autovacuum would get there later).
            with self.engine.db.engine.connect() as conn:
                conn.exec_driver_sql("ANALYZE memory_chunks")
                conn.commit()
        self.backend.apply_changes(self._changes.freeze())  # the backend's own index follows the table
        self._changes = None
        report.seconds = round(time.perf_counter() - started, 4)
        return report

    # ------------------------------------------------------------------ reading the index
    def _indexed_users(self, agent_id: str) -> list[str]:
        with self.engine.db.session() as s:
            rows = s.execute(select(DOCS.c.user_id).where(DOCS.c.agent_id == agent_id).distinct()).all()
        return [r[0] for r in rows if r[0]]

    def _existing_docs(self, agent_id: str, scopes: Sequence[str]) -> dict[tuple[str, str], tuple[int, str]]:
        with self.engine.db.session() as s:
            rows = s.execute(
                select(DOCS.c.id, DOCS.c.user_id, DOCS.c.path, DOCS.c.content_hash).where(
                    DOCS.c.agent_id == agent_id, DOCS.c.user_id.in_(list(scopes))
                )
            ).all()
        return {(r[1], r[2]): (int(r[0]), r[3]) for r in rows}

    @staticmethod
    def _batches(pending: Sequence[_Pending]) -> Iterable[list[_Pending]]:
        batch: list[_Pending] = []
        size = 0
        for p in pending:
            estimate = max(1, len(p.text) // 800)
            if batch and (len(batch) >= BATCH_DOCS or size + estimate > BATCH_CHUNKS):
                yield batch
                batch, size = [], 0
            batch.append(p)
            size += estimate
        if batch:
            yield batch

    # ------------------------------------------------------------------ embeddings
    def _vectors_for(
        self,
        chunks: Sequence[TextChunk],
        embedder: EmbeddingProvider | None,
        space: tuple[str, str, int] | None,
        report: IndexReport,
    ) -> dict[str, Any]:
        """Vectors by chunk hash: from the cache when present, else embedded (and cached)."""
        if embedder is None or space is None or not chunks:
            return {}
        texts = {c.hash: c.text for c in chunks}
        found = self._cache_lookup(list(texts), space)
        report.cache_hits += sum(1 for c in chunks if c.hash in found)
        misses = [h for h in texts if h not in found]
        if misses:
            try:
                matrix = embedder.embed([texts[h] for h in misses])
            except Exception as exc:
                report.embedding_error = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
                return found  # chunks without a vector are embedded by a later run
            if len(matrix) != len(misses) or (len(misses) and matrix.shape[1] != space[2]):
                report.embedding_error = (
                    f"embedder returned {getattr(matrix, 'shape', '?')} for {len(misses)} texts"
                )
                return found
            fresh = {h: matrix[i] for i, h in enumerate(misses)}
            self._cache_store(fresh, space)
            found.update(fresh)
            report.chunks_embedded += len(misses)
        return found

    def _cache_lookup(self, hashes: Sequence[str], space: tuple[str, str, int]) -> dict[str, Any]:
        """Cached vectors by chunk hash. On SQLite plain SQL returning the float32 bytes as
        stored (they are written to ``memory_chunks`` as they are); on PostgreSQL arrays."""
        if self.engine.db.backend == "postgresql":
            return self._cache_lookup_pg(hashes, space)
        out: dict[str, Any] = {}
        with self.engine.db.session() as s:
            conn = s.connection()
            for i in range(0, len(hashes), LOOKUP_CHUNK):
                part = hashes[i : i + LOOKUP_CHUNK]
                sql = (
                    "SELECT chunk_hash, embedding FROM embedding_cache WHERE provider = ? AND model = ? "
                    f"AND dim = ? AND chunk_hash IN ({_marks(len(part))})"
                )
                rows = conn.exec_driver_sql(sql, (*space, *part)).all()
                out.update({r[0]: bytes(r[1]) for r in rows if r[1] is not None})
        return out

    def _cache_lookup_pg(self, hashes: Sequence[str], space: tuple[str, str, int]) -> dict[str, Any]:
        provider, model, dim = space
        out: dict[str, Any] = {}
        with self.engine.db.session() as s:
            for i in range(0, len(hashes), LOOKUP_CHUNK):
                part = hashes[i : i + LOOKUP_CHUNK]
                rows = s.execute(
                    select(CACHE.c.chunk_hash, CACHE.c.embedding).where(
                        CACHE.c.provider == provider,
                        CACHE.c.model == model,
                        CACHE.c.dim == dim,
                        CACHE.c.chunk_hash.in_(part),
                    )
                ).all()
                out.update({r[0]: r[1] for r in rows if r[1] is not None})
        return out

    def _cache_store(self, vectors: dict[str, Any], space: tuple[str, str, int]) -> None:
        provider, model, dim = space
        rows = [
            {
                "chunk_hash": h,
                "provider": provider,
                "model": model,
                "dim": dim,
                "embedding": v,
                "created_at": utcnow(),
            }
            for h, v in vectors.items()
        ]

        def _do(session: Session) -> None:
            for i in range(0, len(rows), LOOKUP_CHUNK):
                stmt = _insert(session, CACHE).on_conflict_do_nothing()
                session.execute(stmt, rows[i : i + LOOKUP_CHUNK])

        self.engine.db.run_write(_do)

    # ------------------------------------------------------------------ writing
    def _write_each(
        self,
        agent_id: str,
        batch: Sequence[_Pending],
        vectors: dict[str, Any],
        space: tuple[str, str, int] | None,
        report: IndexReport,
    ) -> None:
        """Write a batch; when the database refuses it, write its files one by one and skip
        (and report) the ones it refuses, so one bad file never stops the rest (issue 12)."""
        try:
            self._write_batch(agent_id, batch, vectors, space, report)
            return
        except Exception as exc:
            if not _refused(exc):
                raise
            if len(batch) == 1:
                report.skip(batch[0].file.path, _reason(exc))
                return
        for p in batch:
            self._write_each(agent_id, [p], vectors, space, report)

    def _write_batch(
        self,
        agent_id: str,
        batch: Sequence[_Pending],
        vectors: dict[str, Any],
        space: tuple[str, str, int] | None,
        report: IndexReport,
    ) -> None:
        """Replace the chunks of every document in ``batch`` in one transaction.

        Plain SQL with executemany (the same text on both backends): the ORM's per-statement
        overhead was most of the indexing time for small documents. Terms are computed before
        the transaction opens.
        """
        pg = self.engine.db.backend == "postgresql"
        tokenize = default_tokenizer().terms
        terms = [[tokenize(c.text) for c in p.chunks] for p in batch]
        track = self._changes is not None

        def _do(session: Session) -> tuple[int, tuple[str, str], list[int], list[ChunkRecord]]:
            conn = session.connection()
            ids = _upsert_documents(conn, agent_id, batch, pg)
            doc_ids = list(ids.values())
            removed = [r[0] for r in _chunk_ids(conn, doc_ids)] if track else []
            for i in range(0, len(doc_ids), LOOKUP_CHUNK):
                conn.execute(delete(CHUNKS).where(CHUNKS.c.document_id.in_(doc_ids[i : i + LOOKUP_CHUNK])))
            new_ids = _insert_chunks(conn, agent_id, batch, ids, terms, vectors, space, pg)
            added = _written_records(conn, batch, doc_ids, terms, vectors, space, new_ids) if track else []
            written = sum(len(p.chunks) for p in batch)
            return written, bump_version(session, agent_id), removed, added

        written, tokens, removed, added = self.engine.db.run_write(_do)
        if self._changes is not None:
            self._changes.step(tokens)
            self._changes.remove(removed)
            self._changes.add(added)
        report.chunks_written += written
        report.rechunked += len(batch)
        report.changed_paths.extend(p.file.path for p in batch)

    def _remove(self, agent_id: str, doc_ids: Sequence[int]) -> None:
        def _do(session: Session) -> tuple[tuple[str, str], list[int]]:
            conn = session.connection()
            removed = [r[0] for r in _chunk_ids(conn, doc_ids)] if self._changes is not None else []
            for i in range(0, len(doc_ids), LOOKUP_CHUNK):
                part = list(doc_ids[i : i + LOOKUP_CHUNK])
                session.execute(delete(CHUNKS).where(CHUNKS.c.document_id.in_(part)))
                session.execute(delete(DOCS).where(DOCS.c.id.in_(part), DOCS.c.agent_id == agent_id))
            return bump_version(session, agent_id), removed

        tokens, removed = self.engine.db.run_write(_do)
        if self._changes is not None:
            self._changes.step(tokens)
            self._changes.remove(removed)

    def _reembed(
        self,
        agent_id: str,
        scopes: Sequence[str],
        embedder: EmbeddingProvider,
        space: tuple[str, str, int],
        report: IndexReport,
        progress: Progress | None,
    ) -> None:
        """Give vectors of the current model to chunks that have none or another model's."""
        provider, model, dim = space
        with self.engine.db.session() as s:
            stale = s.execute(
                select(
                    CHUNKS.c.id,
                    CHUNKS.c.chunk_hash,
                    CHUNKS.c.text,
                    CHUNKS.c.user_id,
                    CHUNKS.c.path,
                    CHUNKS.c.start_line,
                    CHUNKS.c.end_line,
                    CHUNKS.c.lex,
                ).where(
                    CHUNKS.c.agent_id == agent_id,
                    CHUNKS.c.user_id.in_(list(scopes)),
                    (CHUNKS.c.embedding_model.is_(None))
                    | (CHUNKS.c.embedding_provider != provider)
                    | (CHUNKS.c.embedding_model != model)
                    | (CHUNKS.c.embedding_dim != dim),
                )
            ).all()
        if not stale:
            return
        total = len(stale)
        if progress:
            progress("embed", 0, total)
        pg = self.engine.db.backend == "postgresql"
        stmt = text(
            "UPDATE memory_chunks SET embedding = "
            + ("CAST(:emb AS vector)" if pg else ":emb")
            + ", embedding_provider = :p, embedding_model = :m, embedding_dim = :d WHERE id = :cid"
        )
        for i in range(0, total, BATCH_CHUNKS):
            part = stale[i : i + BATCH_CHUNKS]
            chunks = [TextChunk(r[2], 0, 0) for r in part]
            vectors = self._vectors_for(chunks, embedder, space, report)
            found = [(int(r[0]), vectors[r[1]]) for r in part if r[1] in vectors]
            if not found:
                break

            def _do(session: Session, found: list[tuple[int, Any]] = found) -> tuple[str, str]:
                conn = session.connection()
                vec = _vector_param(pg)
                meta = {"p": provider, "m": model, "d": dim}
                conn.execute(stmt, [{"cid": cid, "emb": vec(v), **meta} for cid, v in found])
                return bump_version(session, agent_id)

            tokens = self.engine.db.run_write(_do)
            if self._changes is not None:
                info = {int(r[0]): r for r in part}
                self._changes.step(tokens)
                self._changes.remove(cid for cid, _ in found)
                self._changes.add(
                    ChunkRecord(
                        cid,
                        info[cid][3],
                        info[cid][4],
                        int(info[cid][5]),
                        int(info[cid][6]),
                        info[cid][2],
                        info[cid][1],
                        (info[cid][7] or "").split()
                        if info[cid][7] is not None
                        else default_tokenizer().terms(info[cid][2]),
                        space,
                        v,
                    )
                    for cid, v in found
                )
            report.reembedded += len(found)
            if progress:
                progress("embed", min(total, i + len(part)), total)
