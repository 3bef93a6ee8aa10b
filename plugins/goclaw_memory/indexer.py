"""The memory indexing pipeline.

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

The pieces: :mod:`goclaw_memory.index_scan` (which files changed), :mod:`.embedding_cache`
(vectors), :mod:`.index_writes` (the SQL), :mod:`.reembed` (vectors of a new model) and
:mod:`.index_changes` (what the search backend is told).
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select

from goclaw.contracts.search import SearchBackend
from goclaw_memory import bulk_wal
from goclaw_memory.chunking import chunk_text, hash_all
from goclaw_memory.embedding_cache import cache_reader, vectors_for
from goclaw_memory.index_changes import ChangeSet
from goclaw_memory.index_scan import (
    IndexReport,
    Pending,
    Progress,
    batches,
    changed,
    estimate,
    listing,
    printable_path,
)
from goclaw_memory.index_writes import (
    CHUNKS,
    DOCS,
    LOOKUP_CHUNK,
    bump_version,
    chunk_ids,
    reason,
    refused,
    replace_documents,
)
from goclaw_memory.paths import user_ids
from goclaw_memory.reembed import reembed
from goclaw_memory.write_behind import WriteBehind, read_ahead
from goclaw_search import index_build
from goclaw_search.tokenize import default_tokenizer

ANALYZE_AFTER = 500  # chunks written by one run on PostgreSQL, after which the tables are analyzed

if TYPE_CHECKING:
    import sqlite3
    from pathlib import Path

    from sqlalchemy.orm import Session

    from goclaw.contracts.host import Host
    from goclaw.contracts.providers import EmbeddingProvider
    from goclaw.contracts.store import Agent

# Imported from here by the memory service, the watcher and repair.
__all__ = ["IndexReport", "MemoryIndexer", "Progress", "bump_version", "printable_path"]

Space = tuple[str, str, int]
Batch = tuple[list[Pending], dict[str, Any], list[list[Sequence[str]]]]  # files, vectors, terms

_gc_lock = threading.Lock()
_gc_pauses = 0  # index runs under way that paused the cyclic garbage collector
_gc_was_enabled = False


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for an index run (nested and concurrent runs
    alike; the last one out restores it as it was). A bulk load allocates hundreds of thousands
    of long-lived containers (terms, records, the tokenizer's cache), and each full collection
    walks them all: 12-18 % of a 100,000-chunk run's CPU. Reference counting still frees
    everything the run drops, and a batch that called the embedder ends with a collection of
    the young generations, so cycles made by its calls (HTTP clients) do not pile up."""
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


def _all_embedded(existing: dict[tuple[str, str], tuple[int, str]], report: IndexReport) -> bool:
    """Whether every chunk of the run's scopes is known to have a vector of the run's space:
    none was indexed before (``existing`` is empty), the run wrote every one and each got its
    vector (from the cache or the embedder, without an error). Then the look-up of chunks
    without one (a read of the whole scope: ~0.1 s at 100,000 chunks) has nothing to find."""
    return (
        not existing
        and report.embedding_error is None
        and report.cache_hits + report.chunks_embedded >= report.chunks_written
    )


class MemoryIndexer:
    """Indexes one agent's memory files into ``memory_documents`` / ``memory_chunks``."""

    def __init__(self, engine: Host, backend: SearchBackend, *, max_chunk_len: int = 1000) -> None:
        self.engine = engine
        self.backend = backend
        self.max_chunk_len = max_chunk_len
        self._changes: ChangeSet | None = None
        self._bulk = False  # this run's transactions skip the WAL's automatic checkpoint

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
        with paused_gc():
            return self._index(agent, agent_dir, scopes, embedder, embedder_error, progress)

    def _index(
        self,
        agent: Agent,
        agent_dir: Path,
        scopes: Sequence[str] | None,
        embedder: EmbeddingProvider | None,
        embedder_error: str | None,
        progress: Progress | None,
    ) -> IndexReport:
        started = time.perf_counter()
        report = IndexReport(agent=agent.name, embedding_error=embedder_error)
        self._changes = ChangeSet(agent.id)
        if scopes is None:
            scopes = sorted({"", *user_ids(agent_dir), *self._indexed_users(agent.id)})
        embedder, space = self._space(embedder, report)
        existing = self._existing_docs(agent.id, scopes)
        files = listing(agent_dir, scopes)
        seen: set[tuple[str, str]] = set()
        # Read as the run goes (on the reader thread, beside the tokenizing and the writes),
        # not all before it: at 100,000 chunks reading 16,667 files first would delay the
        # first batch by ~0.9 s.
        pending = self._bulk_when_large(changed(files, existing, report, seen))
        try:
            self._write_pending(agent.id, pending, embedder, space, report, progress, len(files))
        finally:
            if self._bulk:
                self._bulk = False
                bulk_wal.checkpoint_later(self.engine)
        removed = [(key, doc[0]) for key, doc in existing.items() if key not in seen]
        if removed:
            self._remove(agent.id, [doc_id for _key, doc_id in removed])
            report.removed = len(removed)
            report.changed_paths.extend(key[1] for key, _ in removed)
        if embedder is not None and space is not None and not _all_embedded(existing, report):
            folder = self.engine.agent_dir(agent)
            args = (self.engine, self._changes, agent.id, scopes, embedder, space, report, progress)
            reembed(*args, folder, self.max_chunk_len)
        changes = self._changes.freeze()
        self.backend.apply_changes(changes)  # the backend's own index follows the table
        self._changes = None
        self._analyze_after_load(report)  # after the backend's compaction and HNSW build
        report.seconds = round(time.perf_counter() - started, 4)
        return report

    def _space(
        self, embedder: EmbeddingProvider | None, report: IndexReport
    ) -> tuple[EmbeddingProvider | None, Space | None]:
        """The embedder's space, once the backend is ready for its vectors; ``(None, None)``
        without an embedder or when it cannot be used (reported)."""
        if embedder is None:
            return None, None
        try:
            space = (embedder.provider, embedder.model, int(embedder.dim))
            if self._changes is not None:
                self._changes.space = space
            report.embedding = f"{space[0]}/{space[1]} ({space[2]}-d)"
            self.backend.prepare_vectors(space[2])
        except Exception as exc:
            report.embedding_error = f"{type(exc).__name__}: {exc}"
            return None, None
        return embedder, space

    def _bulk_when_large(self, pending: Iterable[Pending]) -> Iterator[Pending]:
        """``pending`` as it comes; once its files make :data:`goclaw_memory.bulk_wal.BULK`
        chunks (estimated) on a SQLite file, the run's later transactions commit without WAL
        checkpoints and it checkpoints once, after it (:mod:`goclaw_memory.bulk_wal`). The
        transactions before stay small enough not to reach the automatic checkpoint."""
        size = 0 if bulk_wal.database_path(self.engine) is not None else None
        for p in pending:
            if size is not None:
                size += estimate(p)
                if size >= bulk_wal.BULK:
                    self._bulk, size = True, None
            yield p

    def _write_pending(
        self,
        agent_id: str,
        pending: Iterable[Pending],
        embedder: EmbeddingProvider | None,
        space: Space | None,
        report: IndexReport,
        progress: Progress | None,
        total: int,
    ) -> None:
        """Chunk, embed and write the changed files, a transaction per batch: batch N+1's
        chunks and vectors are read on one background thread while batch N is tokenized here
        and batch N-1 written on another (:func:`goclaw_memory.write_behind.read_ahead`,
        :class:`~goclaw_memory.write_behind.WriteBehind`)."""

        with cache_reader(self.engine) as reader:

            def vectors(batch: list[Pending]) -> dict[str, Any]:
                return self._vectors(batch, embedder, space, report, reader)

            read = read_ahead(batches(pending), vectors)
            try:
                ready = (self._ready(b, found) for b, found in read)
                self._write_batches(agent_id, ready, space, report, progress, total)
            finally:
                read.close()  # stopped early: the read under way ends before the run does

    def _vectors(
        self,
        batch: list[Pending],
        embedder: EmbeddingProvider | None,
        space: Space | None,
        report: IndexReport,
        reader: sqlite3.Connection | None = None,
    ) -> dict[str, Any]:
        """Chunk the batch's files; their chunks' vectors (from the cache or the embedder;
        ``reader``: :func:`goclaw_memory.embedding_cache.cache_reader`'s connection)."""
        for p in batch:
            p.chunks = chunk_text(p.text, self.max_chunk_len)
        embedded = report.chunks_embedded
        chunks = [c for p in batch for c in p.chunks]
        hash_all(chunks)
        vectors = vectors_for(self.engine, chunks, embedder, space, report, bulk=self._bulk, reader=reader)
        if report.chunks_embedded != embedded:  # an embedder's calls may leave cycles behind:
            gc.collect(1)  # collect the young generations (the batch's objects; ~10 ms)
        return vectors

    @staticmethod
    def _ready(batch: list[Pending], vectors: dict[str, Any]) -> Batch:
        """A chunked batch ready to write: its files, their chunks' vectors and terms (the
        tokenizer's term ids, :class:`goclaw_search.tokenize.TermIds`, one batch at once)."""
        found = default_tokenizer().batch([c.indexed for p in batch for c in p.chunks])
        terms: list[list[Sequence[str]]] = []
        at = 0
        for p in batch:
            terms.append(found[at : at + len(p.chunks)])
            at += len(p.chunks)
        return batch, vectors, terms

    def _write_batches(
        self,
        agent_id: str,
        ready: Iterable[Batch],
        space: Space | None,
        report: IndexReport,
        progress: Progress | None,
        total: int,
    ) -> None:
        """Write each batch of ``ready`` in its transaction. Batch N is written on a background
        thread while ``ready`` makes batch N+1 (:class:`goclaw_memory.write_behind.WriteBehind`:
        the same transactions, in order, one thread writing): the database's work and the
        disk's hide behind the chunking and tokenizing. ``progress`` counts the files of the
        run's listing (``total``) up to the last one written (:attr:`Pending.done`), unchanged
        ones included."""
        if progress:
            progress("index", 0, total)
        if self._bulk:
            index_build.prefetch_bulk()  # the index build's import overlaps the writes

        def write(item: Batch) -> int:
            batch, vectors, terms = item
            self._write_each(agent_id, batch, vectors, space, report, terms)
            return batch[-1].done

        def show(done: list[int]) -> None:
            if progress and done:
                progress("index", max(done), total)

        with WriteBehind(write) as writer:
            for item in ready:
                show(writer.submit(item))
            show(writer.finish())
        if progress:
            progress("index", total, total)  # the files after the last one written were unchanged

    def _analyze_after_load(self, report: IndexReport) -> None:
        written = report.chunks_written + report.reembedded
        if self.engine.db.backend == "postgresql" and written >= ANALYZE_AFTER:
            # Fresh statistics after a load (after the backend's compaction and HNSW build), so
            # the planner picks the indexes instead of trusting empty-table figures.
            from goclaw_memory.pg_stats import analyze

            with self.engine.db.engine.connect() as conn:
                analyze(conn.exec_driver_sql)
                conn.commit()

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

    # ------------------------------------------------------------------ writing
    def _write_each(
        self,
        agent_id: str,
        batch: Sequence[Pending],
        vectors: dict[str, Any],
        space: Space | None,
        report: IndexReport,
        terms: Sequence[list[Sequence[str]]],
    ) -> None:
        """Write a batch; when the database refuses it, write its files one by one and skip
        (and report) the ones it refuses, so one bad file never stops the rest.
        ``terms``: each file's chunks' terms (computed before any transaction opens)."""
        try:
            self._write_batch(agent_id, batch, vectors, space, report, terms=terms)
            return
        except Exception as exc:
            if not refused(exc):
                raise
            if len(batch) == 1:
                report.skip(batch[0].file.path, reason(exc))
                return
        for i, p in enumerate(batch):
            self._write_each(agent_id, [p], vectors, space, report, [terms[i]])

    def _write_batch(
        self,
        agent_id: str,
        batch: Sequence[Pending],
        vectors: dict[str, Any],
        space: Space | None,
        report: IndexReport,
        *,
        terms: Sequence[list[Sequence[str]]],
    ) -> None:
        """Replace the chunks of every document in ``batch`` in one transaction (``terms``:
        each file's chunks' terms, computed before it opens)."""
        track = self._changes is not None

        bulk = self._bulk

        def _do(session: Session) -> tuple[tuple[str, str], list[int], list[Any]]:
            if bulk:
                bulk_wal.hold_checkpoints(session)
            return replace_documents(session, agent_id, batch, terms, vectors, space, track)

        tokens, removed, added = self.engine.db.run_write(_do)
        if self._changes is not None:
            self._changes.record(tokens, removed, added)
        report.chunks_written += sum(len(p.chunks) for p in batch)
        report.rechunked += len(batch)
        report.changed_paths.extend(p.file.path for p in batch)

    def _remove(self, agent_id: str, doc_ids: Sequence[int]) -> None:
        def _do(session: Session) -> tuple[tuple[str, str], list[int]]:
            conn = session.connection()
            removed = [r[0] for r in chunk_ids(conn, doc_ids)] if self._changes is not None else []
            for i in range(0, len(doc_ids), LOOKUP_CHUNK):
                part = list(doc_ids[i : i + LOOKUP_CHUNK])
                session.execute(delete(CHUNKS).where(CHUNKS.c.document_id.in_(part)))
                session.execute(delete(DOCS).where(DOCS.c.id.in_(part), DOCS.c.agent_id == agent_id))
            return bump_version(session, agent_id), removed

        tokens, removed = self.engine.db.run_write(_do)
        if self._changes is not None:
            self._changes.record(tokens, removed, ())
