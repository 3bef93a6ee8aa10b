"""Vectors for chunks during indexing: from ``embedding_cache`` when the text was embedded before
by this (provider, model, dimension), else from the embedder (and then cached), so unchanged
text is never embedded twice."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from goclaw.contracts.columns import utcnow
from goclaw.contracts.search import Space
from goclaw.contracts.store import EmbeddingCache
from goclaw_memory.index_writes import LOOKUP_CHUNK, dialect_insert, marks

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from goclaw.contracts.host import Host
    from goclaw.contracts.providers import EmbeddingProvider
    from goclaw_memory.chunking import TextChunk
    from goclaw_memory.index_scan import IndexReport

CACHE = EmbeddingCache.__table__


def vectors_for(
    engine: Host,
    chunks: Sequence[TextChunk],
    embedder: EmbeddingProvider | None,
    space: Space | None,
    report: IndexReport,
    *,
    bulk: bool = False,
    reader: sqlite3.Connection | None = None,
) -> dict[str, Any]:
    """Vectors by chunk hash: from the cache when present, else embedded (and cached). Cached
    vectors come as float32 bytes on SQLite, arrays on PostgreSQL; fresh ones as arrays.
    ``bulk``: part of a large run on SQLite, whose commits skip the WAL checkpoint
    (:mod:`goclaw_memory.bulk_wal`); ``reader``: a connection of :func:`cache_reader` to read
    the cache with (one for a whole run), else one is opened for this call."""
    if embedder is None or space is None or not chunks:
        return {}
    texts = {c.hash: c.indexed for c in chunks}  # with its heading path (TextChunk.indexed)
    found = cache_lookup(engine, sorted(texts), space, reader)  # in key order: neighbouring index pages
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
        cache_store(engine, fresh, space, bulk=bulk)
        found.update(fresh)
        report.chunks_embedded += len(misses)
    return found


def cache_lookup(
    engine: Host, hashes: Sequence[str], space: Space, reader: sqlite3.Connection | None = None
) -> dict[str, Any]:
    """Cached vectors by chunk hash. On SQLite plain SQL returning them as stored, float32 (as
    bytes, or rows of one read-only array: :func:`_packed`; either is written to
    ``memory_chunks`` as it is); on PostgreSQL arrays. ``reader``: see :func:`vectors_for`."""
    if engine.db.backend == "postgresql":
        return _cache_lookup_pg(engine, hashes, space)
    out: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        if reader is None:
            reader = _reader(engine)
            if reader is not None:
                stack.callback(reader.close)
        if reader is None:
            session = stack.enter_context(engine.db.session())
            cursor = session.connection().connection.cursor()  # the sqlite3 cursor: plain tuples
        else:
            cursor = reader.cursor()
        stack.callback(cursor.close)
        step = _per_query(cursor.connection)
        for i in range(0, len(hashes), step):
            out.update(_packed(cursor, space, hashes[i : i + step]))
    return out


def _per_query(conn: sqlite3.Connection) -> int:
    """Hashes per look-up: :data:`PACKED_CHUNK`, or fewer where SQLite takes fewer parameters
    (3.32 and later take 32,766); :data:`LOOKUP_CHUNK` where the limit cannot be read. Each
    query gives the GIL up and takes it back once; while the index run's other threads hold
    it, taking it back can wait a switch interval (5 ms), so a 100,000-chunk run makes ~20
    queries, not 200."""
    try:
        limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    except (AttributeError, sqlite3.Error):  # Python < 3.11
        return LOOKUP_CHUNK
    return max(1, min(PACKED_CHUNK, limit - 3))  # 3: provider, model, dim


PACKED_CHUNK = 8_000
_WHERE = "FROM embedding_cache WHERE provider = ? AND model = ? AND dim = ? AND chunk_hash IN ({}) "
_PACKED = (
    "SELECT group_concat(chunk_hash, ','), CAST(group_concat(embedding, '') AS BLOB), "
    "group_concat(length(embedding), ',') " + _WHERE + "AND embedding IS NOT NULL"
)
_ROWS = "SELECT chunk_hash, embedding " + _WHERE + "AND embedding IS NOT NULL"


def _packed(cursor: sqlite3.Cursor, space: Space, part: Sequence[str]) -> list[tuple[str, Any]]:
    """The cached ``(hash, vector)`` of ``part`` in one result row: the hashes, the vectors'
    bytes end to end and their lengths, each joined by SQLite (one row: the driver gives the
    GIL up and takes it back once, not once a row, which with the index run's other threads
    waiting for it costs ~1 s of a 100,000-chunk run). When every vector has the space's size
    they come as the rows of one read-only float32 array over the row's bytes (no copy per
    vector: a 100,000-chunk run allocates ~200 MB less), else as float32 bytes each. Read row
    by row when what came back does not add up (a hash holding a comma)."""
    marked = marks(len(part))
    # fetchall: the statement runs to its end, so the read transaction ends here (one left
    # open would keep the write-ahead log from being checkpointed meanwhile)
    ((hashes, blob, lengths),) = cursor.execute(_PACKED.format(marked), (*space, *part)).fetchall()
    if hashes is None:
        return []
    keys = hashes.split(",")
    sizes = [int(n) for n in lengths.split(",")]
    if len(keys) == len(sizes) and sum(sizes) == len(blob):
        if all(map((4 * space[2]).__eq__, sizes)):  # each a vector of the space: rows of one array
            import numpy as np

            rows = np.frombuffer(blob, dtype=np.float32).reshape(len(keys), space[2])
            return list(zip(keys, rows, strict=True))
        out = []
        at = 0
        for key, size in zip(keys, sizes, strict=True):
            out.append((key, blob[at : at + size]))
            at += size
        return out
    return cursor.execute(_ROWS.format(marked), (*space, *part)).fetchall()  # type: ignore[no-any-return]


@contextlib.contextmanager
def cache_reader(engine: Host) -> Iterator[sqlite3.Connection | None]:
    """One read-only connection for a run's cache look-ups (:func:`_reader`; ``None`` on
    PostgreSQL or for a database in memory), closed at the end. A connection per look-up
    maps the file again and faults its index pages in again: ~0.2 s of a 100,000-chunk run."""
    conn = None if engine.db.backend == "postgresql" else _reader(engine)
    try:
        yield conn
    finally:
        if conn is not None:
            conn.close()


def _reader(engine: Host) -> sqlite3.Connection | None:
    """A private read-only connection to the SQLite file whose pages are read through a memory
    map (a bulk load's 100,000 look-ups: 0.50 -> 0.36 s of CPU, the pool's connections read
    each page by a system call into a 2 MB cache); None for a database in memory or when it
    cannot be opened (the caller reads through the engine's session)."""
    path = engine.db.engine.url.database
    if not path or path == ":memory:" or path.startswith("file:"):
        return None
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except sqlite3.Error:
        return None
    try:
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("PRAGMA query_only=1")
        conn.execute("PRAGMA mmap_size=1073741824")  # reads only: nothing written through the map
    except sqlite3.Error:
        conn.close()
        return None
    return conn


def _cache_lookup_pg(engine: Host, hashes: Sequence[str], space: Space) -> dict[str, Any]:
    provider, model, dim = space
    out: dict[str, Any] = {}
    with engine.db.session() as s:
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


def cache_store(engine: Host, vectors: dict[str, Any], space: Space, *, bulk: bool = False) -> None:
    """Add fresh vectors to the cache (a hash already there is left as it is); ``bulk``: see
    :func:`vectors_for`."""
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
        if bulk:
            from goclaw_memory.bulk_wal import hold_checkpoints

            hold_checkpoints(session)
        for i in range(0, len(rows), LOOKUP_CHUNK):
            stmt = dialect_insert(session, CACHE).on_conflict_do_nothing()
            session.execute(stmt, rows[i : i + LOOKUP_CHUNK])

    engine.db.run_write(_do)
