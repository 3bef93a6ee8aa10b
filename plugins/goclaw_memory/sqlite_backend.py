"""The SQLite search backend: the retrieval engine's in-memory index, kept in sync with the
``memory_chunks`` table and persisted next to the database.

The table is the source of truth. Per agent, one :class:`goclaw_search.index.SearchIndex`
holds every chunk's BM25 postings (from the stored ``lex`` terms) and its vector of the
configured embedding space, so a search scores every chunk of the scope on both channels and
fuses them exactly (:func:`goclaw_search.fusion.fuse`).

Keeping in sync: every indexing transaction replaces the agent's version token
(``worker_state``). A search reads the token (one primary-key read on a private raw
connection) and, when it moved, *reconciles*: compares each chunk's fingerprint (hash, user,
vector presence) with the index and applies only the difference. An index run in this process
patches the index directly (:meth:`apply_changes`). The index is saved to
``<database>.index/<agent>.idx/`` after a large change, so a new process loads it in a fraction
of a second and reconciles what changed since.
"""

from __future__ import annotations

import functools
import logging
import shutil
import sqlite3
import threading
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from goclaw.contracts.search import (
    ChunkRecord,
    ChunkRow,
    IndexChanges,
    IndexSource,
    SearchBackend,
    SearchQuery,
    SearchResult,
    Space,
)
from goclaw_memory.filters import FacetCache, allowed_ids
from goclaw_memory.search_rows import (
    ChunkTexts,
    RowBlock,
    indexed_result,
    make_row,
    scored_chunks,
    shown,
)
from goclaw_memory.snapshot_files import SWEEP_EVERY, remove_stale_leftovers, snapshot_name
from goclaw_memory.version_token import VERSION_WORKER, parse_token
from goclaw_search.index import FORMAT, Doc, SearchIndex
from goclaw_search.tokenize import Tokenizer, default_tokenizer

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

log = logging.getLogger(__name__)

SAVE_DELTA = 2_000  # changes since the last save that make an index run save the index
RETRY_SAVE = 600.0  # seconds without save attempts after one failed
LOOKUP = 500
# Chunks read and added to the index at a time when catching up: a first build of 100k chunks
# holds one batch's term strings, not all of them (they are the bulk of its peak memory).
UPSERT_BATCH = 10_000


def fingerprint(chunk_hash: str, user_id: str, has_vector: bool) -> int:
    """A stable 62-bit fingerprint of what the index holds for a chunk."""
    try:
        h = int(chunk_hash[:14], 16)
    except ValueError:
        h = zlib.crc32(chunk_hash.encode("utf-8"))
    return ((h ^ _user_bits(user_id)) << 1 | int(has_vector)) & ((1 << 62) - 1)


@lru_cache(maxsize=4096)
def _user_bits(user_id: str) -> int:
    return zlib.crc32(user_id.encode("utf-8")) << 24


def fingerprints(hashes: Sequence[str], users: Sequence[str], has_vector: Sequence[bool]) -> list[int]:
    """:func:`fingerprint` of many chunks at once, the same numbers (a bulk load's 100,000:
    0.2 s one by one). Hashes that are not all plain hex of 14 characters or more go one by
    one (``int(..., 16)`` reads forms ``bytes.fromhex`` does not, and the other way round)."""
    head = "".join([h[:14] for h in hashes])
    if len(head) != 14 * len(hashes) or not (head.isascii() and head.isalnum()):
        return [fingerprint(h, u, v) for h, u, v in zip(hashes, users, has_vector, strict=True)]
    try:
        raw = np.frombuffer(bytes.fromhex(head), dtype=np.uint8).reshape(-1, 7).astype(np.uint64)
    except ValueError:
        return [fingerprint(h, u, v) for h, u, v in zip(hashes, users, has_vector, strict=True)]
    value = np.zeros(len(hashes), dtype=np.uint64)
    for col in range(7):  # big-endian: the first byte is the most significant
        value <<= np.uint64(8)
        value |= raw[:, col]
    bits = {u: _user_bits(u) for u in set(users)}
    value ^= np.fromiter(map(bits.__getitem__, users), dtype=np.uint64, count=len(users))
    value <<= np.uint64(1)
    value |= np.fromiter(has_vector, dtype=np.bool_, count=len(users)).astype(np.uint64)
    value &= np.uint64((1 << 62) - 1)
    return value.astype(np.int64).tolist()  # type: ignore[no-any-return]


def docs_of(records: Sequence[ChunkRecord], space: Space | None) -> list[Doc]:
    """:func:`doc_of` of many records (fingerprints computed together)."""
    vecs = [r.vector if space is not None and r.space == space else None for r in records]
    users = [r.user_id for r in records]
    fps = fingerprints([r.chunk_hash for r in records], users, [v is not None for v in vecs])
    ids, terms, none = [r.id for r in records], [r.terms for r in records], [None] * len(records)
    where = ([r.path for r in records], [r.start_line for r in records], [r.end_line for r in records])
    return list(map(Doc, ids, users, terms, vecs, fps, none, *where))


def doc_of(rec: ChunkRecord, space: Space | None) -> Doc:
    """The index document of a chunk record; its vector only when it is of ``space``."""
    vec = rec.vector if space is not None and rec.space == space else None
    fp = fingerprint(rec.chunk_hash, rec.user_id, vec is not None)
    return Doc(rec.id, rec.user_id, rec.terms, vec, fp, None, rec.path, rec.start_line, rec.end_line)


@dataclass
class _State:
    index: SearchIndex
    token: str
    space: Space | None
    lock: threading.RLock = field(default_factory=threading.RLock)
    unsaved: int = 0  # changes since the index was last saved
    dropped: bool = False  # invalidated (e.g. by a forget): never to be saved again
    deferred: int = 0  # sketch jobs under way (goclaw_memory.deferred_sketches): they save it


class SQLiteSearchBackend(SearchBackend):
    """In-memory BM25 + exact cosine over each agent's chunks."""

    name = "sqlite"
    filters = True  # query.filter is applied as a mask before fusion (goclaw_memory.filters)

    def __init__(self, engine: Host) -> None:
        self.engine = engine
        self._lock = threading.Lock()
        self._states: dict[str, _State] = {}
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self.loads = 0  # reconciliations that read rows (tests and benchmarks read these)
        self.patches = 0
        self.tokenizer: Tokenizer = default_tokenizer()
        path = engine.db.engine.url.database if engine.db.backend == "sqlite" else None
        self._db_path = path if path and path != ":memory:" and not path.startswith("file:") else None
        self.snapshot_dir = Path(self._db_path + ".index") if self._db_path else None
        self._no_save_until = 0.0  # a save failed: in memory only until then
        self._save_failed = False  # warned once; later failures are logged at info
        # Calls of invalidate so far: a save that fails after one began was cut short by its
        # deletions (its folder went), not by the disk; that save only is dropped, no back-off.
        self.invalidations = 0
        self._swept = -SWEEP_EVERY  # time.monotonic() of the last sweep of stale leftovers
        from goclaw_memory.deferred_sketches import SketchJobs

        self.sketch_jobs = SketchJobs(self)  # a large run's passage sketches, after it returns
        self.last_search = 0.0  # time.monotonic() of the last search's start
        self.facets = FacetCache()  # each agent's chunk tags, dates and paths, for filters

    # ------------------------------------------------------------------ connections
    def _conn(self) -> Any:
        """A private autocommit connection per thread for the hot path (no pool, no ORM)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._db_path is None:
                return None
            conn = sqlite3.connect(self._db_path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout=5000")
            conn.execute("PRAGMA query_only=1")
            # Read the candidates' rows through a memory map, not the small page cache (60 rows
            # by primary key at 10k chunks: 0.14 -> 0.11 ms); read-only, so nothing to corrupt.
            # Up to 2 GB (SQLite's default cap; address space only): at 100k chunks the table is
            # ~570 MB, and with a 256 MB map half the rows came through the page cache (60 rows
            # after the search swept the CPU caches: 0.31 -> 0.25 ms).
            conn.execute("PRAGMA mmap_size=2147418112")
            self._local.conn = conn
            self._local.data_version, self._local.tokens = None, {}
            with self._lock:
                self._conns.append(conn)
        return conn

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        conn = self._conn()
        if conn is not None:
            return conn.execute(sql, params).fetchall()
        with self.engine.db.engine.connect() as c:
            return list(c.exec_driver_sql(sql, tuple(params)).all())

    def _token(self, agent_id: str) -> str:
        """The agent's version token. On the private connection it is read again only when the
        database changed since this connection last read it: ``PRAGMA data_version`` moves when
        another connection commits, and this one never writes (``query_only``): ~3 us instead
        of a table read (~0.03 ms just after a search swept the CPU caches)."""
        conn = self._conn()
        if conn is None:
            return self._read_token(agent_id)
        local = self._local
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if local.data_version != version:
            local.data_version, local.tokens = version, {}
        tokens: dict[str, str] = local.tokens
        token = tokens.get(agent_id)
        if token is None:  # read after the version: a commit in between moves it again
            token = tokens[agent_id] = self._read_token(agent_id)
        return token

    def _read_token(self, agent_id: str) -> str:
        rows = self._query(
            "SELECT value FROM worker_state WHERE worker = ? AND scope = ?", (VERSION_WORKER, agent_id)
        )
        return parse_token(rows[0][0]) if rows else ""

    # ------------------------------------------------------------------ state
    def _snapshot(self, agent_id: str) -> Path | None:
        if self.snapshot_dir is None:
            return None
        return self.snapshot_dir / f"{snapshot_name(agent_id)}.idx"

    def _state(self, agent_id: str, space: Space | None) -> _State:
        token = self._token(agent_id)
        loaded = None
        with self._lock:
            st = self._states.get(agent_id)
            if st is not None and st.token == token and (space is None or st.space == space):
                return st
            if st is None or (space is not None and st.space != space):
                st = loaded = self._load(agent_id, space)
                st = st or _State(SearchIndex(space[2] if space else 0), "", space)
                self._states[agent_id] = st
        with st.lock:
            caught_up = st.token != token
            if caught_up:
                self._reconcile(agent_id, st)
                st.token = token
            if (caught_up or st is loaded) and st.unsaved >= SAVE_DELTA and not self._unsaveable:
                # A large catch-up by a reader (a first build here, a saved index of an older
                # format): saved, so the next process loads it instead of rebuilding it too
                # (100k chunks: 36 s for every process's first search until an index run).
                # Only here, once current and under the state's lock: ``save`` skips a state a
                # forget dropped meanwhile.
                self.save(agent_id)
        return st

    def _load(self, agent_id: str, space: Space | None) -> _State | None:
        path = self._snapshot(agent_id)
        self.sweep_leftovers()  # what saves killed part-way left (the first load of a process)
        if path is None or not path.exists():
            return None
        try:
            # Verified on load (checksums of every file, scope numbers): a damaged or edited
            # index is refused like an unreadable one, never searched.
            idx = SearchIndex.load(path)
        except Exception as exc:  # a damaged, edited or old file: rebuild from the table
            level = logging.INFO if "unsupported index format" in str(exc) else logging.WARNING
            log.log(level, "memory index %s unreadable (%s); rebuilding it", path, exc)
            # Deleted, so the rebuilt index is saved in its place (a save replaces it anyway)
            # and no later process reads it again.
            shutil.rmtree(path, ignore_errors=True)
            return None
        owner = idx.meta.get("agent")  # None: saved before indexes recorded their agent
        if owner is not None and owner != agent_id:
            # another agent's (two ids one file name on a case-insensitive disk, a folder
            # copied by hand): its chunks are not this agent's, even where the tokens agree
            log.info("memory index %s belongs to agent %r, not %r; rebuilding it", path, owner, agent_id)
            return None
        saved = idx.meta.get("space")
        if idx.meta.get("tokenizer") != self.tokenizer.version or (
            space is not None and (saved is None or tuple(saved) != tuple(space))
        ):
            return None
        st = _State(idx, str(idx.meta.get("token", "")), tuple(saved) if saved else None)  # type: ignore[arg-type]
        if not idx.located:
            self._fill_locations(agent_id, st)
        if idx.meta.get("format") != FORMAT:  # saved without checksums: saved again with them
            st.unsaved = max(st.unsaved, SAVE_DELTA)
        return st

    def _fill_locations(self, agent_id: str, st: _State) -> None:
        """An index saved before format 6 has no chunk locations: read them from the table (one
        query, no text: ~0.1 s at 100k chunks); :meth:`_state` saves the index once it is
        current, so the next process loads them (not here: a forget landing meanwhile would
        find its deleted file written back with what it erased). A slot the table lacks stays
        without one until the reconciliation drops it."""
        st.index.set_locations(self._locations(agent_id))
        st.unsaved = max(st.unsaved, SAVE_DELTA)

    def _locations(self, agent_id: str) -> list[tuple[int, str, int, int]]:
        """Every chunk of the agent as ``(id, path, start line, end line)``."""
        rows = self._query(
            "SELECT id, path, start_line, end_line FROM memory_chunks WHERE agent_id = ?", (agent_id,)
        )
        return [(int(i), str(p), int(a), int(b)) for i, p, a, b in rows]

    def _reconcile(self, agent_id: str, st: _State) -> None:
        """Bring ``st.index`` to the table's content: drop what changed or went, add the rest."""
        idx = st.index
        want = self._wanted(agent_id, st.space)
        have = {i: int(idx.fp[s]) for i, s in idx.slot_of.items()}
        stale = [i for i, f in have.items() if want.get(i) != f]
        missing = [i for i, f in want.items() if have.get(i) != f]
        if stale:
            idx.remove(stale)
        added = 0
        for start in range(0, len(missing), UPSERT_BATCH):  # bounded memory on a first build
            docs = self._docs(agent_id, missing[start : start + UPSERT_BATCH], st.space)
            idx.upsert(docs)
            added += len(docs)
        if stale or added:
            self.loads += 1
            st.unsaved += len(stale) + added

    def _wanted(self, agent_id: str, space: Space | None) -> dict[int, int]:
        """Every chunk of the agent with the fingerprint the index must hold for it."""
        provider, model, dim = space if space else ("", "", 0)
        rows = self._query(
            "SELECT id, chunk_hash, user_id, (embedding IS NOT NULL AND embedding_provider = ? AND "
            "embedding_model = ? AND embedding_dim = ?) FROM memory_chunks WHERE agent_id = ?",
            (provider, model, dim, agent_id),
        )
        return {int(r[0]): fingerprint(r[1] or "", r[2] or "", bool(r[3])) for r in rows}

    def _docs(self, agent_id: str, missing: Sequence[int], space: Space | None) -> list[Doc]:
        """The index documents of these chunks (terms, vector of ``space``, fingerprint)."""
        provider, model, dim = space if space else ("", "", 0)
        docs: list[Doc] = []
        texts: list[str] = []
        for start in range(0, len(missing), LOOKUP):
            part = missing[start : start + LOOKUP]
            marks = ",".join("?" * len(part))
            for cid, user, lex, body, chash, emb, ok, path, start, end in self._query(
                "SELECT id, user_id, lex, text, chunk_hash, embedding, (embedding_provider = ? AND "
                "embedding_model = ? AND embedding_dim = ?), path, start_line, end_line "
                f"FROM memory_chunks WHERE id IN ({marks})",
                (provider, model, dim, *part),
            ):
                terms = lex.split() if lex is not None else self.tokenizer.terms(body or "")
                vec = np.frombuffer(emb, dtype=np.float32) if emb is not None and ok else None
                fp = fingerprint(chash or "", user or "", vec is not None)
                docs.append(Doc(int(cid), user or "", terms, vec, fp, None, path, int(start), int(end)))
                texts.append(body or "")
        return self._sketched(docs, texts, space)

    def _sketched(self, docs: list[Doc], texts: Sequence[str], space: Space | None) -> list[Doc]:
        """``docs`` with their passage sketches, if the passage step wants them
        (:func:`goclaw_memory.passage_sketch.with_sketches`)."""
        from goclaw_memory.passage_sketch import with_sketches

        return with_sketches(self.engine, docs, texts, space)

    def chunk_sketches(self, agent_id: str, ids: Sequence[int], space: Space) -> Any:
        """The passage sketches of these chunks in the agent's loaded index of ``space``
        (:class:`goclaw_search.passage_sketches.SketchBatch`; an id it does not hold, ``-1``
        included, has none), or None when no such index is loaded."""
        st = self._states.get(agent_id)
        if st is None or st.space is None or tuple(st.space) != tuple(space):
            return None
        with st.lock:
            idx = st.index
            return idx.psk.select([idx.slot_of.get(int(i), -1) for i in ids])

    def passage_cosines(self, agent_id: str, ids: Sequence[int], space: Space, matrix: Any, q: Any) -> Any:
        """:meth:`chunk_sketches` scored in one call: each chunk's best passage cosine with the
        unit query ``q`` and whether it has a sketch
        (:meth:`goclaw_search.passage_sketches.PassageSketches.best_cosines`: ``matrix``
        the embedder's token rows), or None (no such index loaded)."""
        st = self._states.get(agent_id)
        if st is None or st.space is None or tuple(st.space) != tuple(space):
            return None
        with st.lock:
            idx = st.index
            get = idx.slot_of.get
            return idx.psk.best_cosines([get(i, -1) for i in ids], matrix, q)

    def _fresh_state(self, agent_id: str, changes: IndexChanges) -> _State:
        space = changes.space
        st = _State(SearchIndex(space[2] if space else 0), changes.version_after, space)
        with st.lock:
            st.unsaved = self._add_records(agent_id, st, list(changes.records.values()))
        with self._lock:
            self._states[agent_id] = st
        return st

    def _add_records(self, agent_id: str, st: _State, records: Sequence[ChunkRecord]) -> int:
        """Add an index run's records to ``st.index`` (the caller holds ``st.lock``); returns
        how many (:func:`goclaw_memory.deferred_sketches.add_records`: sketches made here for a
        few; for a large change, made and the index saved after the run returns)."""
        from goclaw_memory.deferred_sketches import add_records

        return add_records(self, agent_id, st, records)

    def discard_saved(self, agent_id: str) -> None:
        """Delete the agent's saved index and whatever a save cut short left beside it (a
        process killed between its renames: ``<name>.<pid>.old``, a staging or temporary
        folder, all holding its terms); the next process rebuilds it from the table."""
        path = self._snapshot(agent_id)
        if path is None:
            return
        for leftover in path.parent.glob(path.name + ".*"):  # agent names hold no dots
            shutil.rmtree(leftover, ignore_errors=True)
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)

    def saved_index(self, agent_id: str) -> Path | None:
        """Where the agent's index is saved (``None``: this backend saves none)."""
        return self._snapshot(agent_id)

    @property
    def _unsaveable(self) -> bool:
        return time.monotonic() < self._no_save_until

    def save(self, agent_id: str) -> Path | None:
        """Persist the agent's index (when loaded) next to the database. After a failure (a
        read-only folder; rarely, another process replacing the same index at that instant) do
        not try again for :data:`RETRY_SAVE` seconds: search goes on from memory, each attempt
        would cost a full write, and only the next process pays a rebuild. The first failure is
        a warning, later ones are logged at info."""
        st = self._states.get(agent_id)
        path = self._snapshot(agent_id)
        if st is None or path is None or self._unsaveable:
            return None
        self.sweep_leftovers()
        with st.lock:
            if st.dropped:
                # invalidated since it was fetched above: writing it would put what a forget
                # erased back on disk (the invalidation waits for this lock, then deletes)
                return None
            if st.deferred:
                return None  # saved by the last sketch job, once the sketches are in
            self._stamp(agent_id, st)
            seen = self.invalidations
            try:
                st.index.save(path)
            except OSError as exc:  # a read-only folder only costs the next start-up time
                self._save_error(path, exc, seen)
                return None
            st.unsaved = 0
        return path

    def sweep_leftovers(self) -> None:
        """Delete what killed saves left in the index folder (every agent's, once nothing can
        be writing it: :func:`goclaw_memory.snapshot_files.remove_stale_leftovers`); before a
        save writes, at most every :data:`SWEEP_EVERY` seconds (one folder listing)."""
        now = time.monotonic()
        if self.snapshot_dir is None or now - self._swept < SWEEP_EVERY:
            return
        self._swept = now
        removed = remove_stale_leftovers(self.snapshot_dir)
        if removed:
            log.info(
                "deleted %d leftover(s) of interrupted memory index saves in %s", removed, self.snapshot_dir
            )

    def save_copy(self, agent_id: str, st: _State) -> Path | None:
        """:meth:`save` for a sketch job: the index copied under the lock, the copy written
        outside it (:func:`goclaw_memory.deferred_sketches.save_copy`)."""
        from goclaw_memory.deferred_sketches import save_copy

        return save_copy(self, agent_id, st)

    def _stamp(self, agent_id: str, st: _State) -> None:
        st.index.meta.update(agent=agent_id, token=st.token, space=list(st.space) if st.space else None)
        st.index.meta["tokenizer"] = self.tokenizer.version

    def _save_error(self, path: Path, exc: OSError, seen: int) -> None:
        """A read-only folder only costs the next start-up time: not again for a while. Unless
        an invalidation came since the save began (``seen``: :attr:`invalidations` then): it
        deleted the folder being written (``invalidate(None)`` deletes every agent's, also
        under a state made after it dropped the loaded ones), so only this save is dropped."""
        if self.invalidations != seen:
            log.debug("memory index save to %s cut short by an invalidation: %s", path, exc)
            return
        self._no_save_until = time.monotonic() + RETRY_SAVE
        level = logging.INFO if self._save_failed else logging.WARNING
        self._save_failed = True
        log.log(
            level,
            "could not save the memory index to %s: %s (searching from memory; next try in %d minutes)",
            path,
            exc,
            RETRY_SAVE // 60,
        )

    # ------------------------------------------------------------------ contract
    # Whether :meth:`_rows_and_token` reads a search's rows and the version token in one round
    # trip: then a search runs on the loaded index first and checks the token with its rows.
    _token_with_rows = False

    def search(self, query: SearchQuery) -> SearchResult:
        self.last_search = time.monotonic()  # background sketching yields to searches
        st = self._states.get(query.agent_id)
        if st is not None and self._token_with_rows and (query.space is None or st.space == query.space):
            found = self._search(st, query, checked=False)
            if found is not None:
                return found  # the index was current: no round trip of its own for the token
        result = self._search(self._state(query.agent_id, query.space), query, checked=True)
        assert result is not None
        return result

    def _search(self, st: _State, query: SearchQuery, *, checked: bool) -> SearchResult | None:
        """The search on ``st``; ``checked``: ``st`` is current (else its token is compared
        with the one read with the rows, and ``None`` returned when it is not current)."""
        notes: list[str] = []
        with st.lock:
            token = st.token
            idx = st.index
            if not idx.n:
                return SearchResult([], notes) if checked else None
            # None when every slot is live and in scope: no masking passes over the arrays.
            mask = idx.scope_filter(query.users)
            lexical = None
            if query.channel in ("hybrid", "lexical"):
                lexical = idx.bm25(query.terms, query.counts())
            unit = None
            if query.channel in ("hybrid", "vector") and query.vector is not None:
                unit = idx.unit_query(query.vector)
                has_vec = idx.has_vec[: idx.n]
                if unit is not None and not (has_vec.any() if mask is None else np.any(has_vec & mask)):
                    unit = None
                    notes.append(_no_vectors_note(query.space))
            if query.filter is not None:
                mask = self._filter_mask(query, token, idx, mask)
            boost = None
            user_codes = [idx.scopes[u] for u in query.users if u and u in idx.scopes]
            if user_codes and query.fusion.user_boost != 1.0:
                per_scope = np.ones(len(idx.scopes), dtype=np.float32)
                per_scope[user_codes] = query.fusion.user_boost
                boost = per_scope[idx.scope[: idx.n]]
            # Every slot's exact cosine, found by the int8 scan and a rescoring of the few
            # slots that can reach the result (SearchIndex.fuse).
            fused = idx.fuse(
                lexical,
                unit,
                mask,
                limit=query.wanted,
                method=query.fusion.method,
                text_weight=query.fusion.text_weight,
                vector_weight=query.fusion.vector_weight,
                boost=boost,
            )
            slots = fused.slots
            ids: list[int] = idx.ids[slots].tolist()
            one_scope = len(set(query.users)) == 1 or len(set(idx.scope[slots].tolist())) <= 1
            # The query terms' positions in each result, from the forward index: the reranker
            # reads proximity from them instead of tokenising the rows' text.
            found = idx.positions(slots, query.terms) if query.terms and query.rerank_terms else None
            # Where the index knows every result's location and no reranker wants the stored
            # terms, the rows come from the index and their text from the table only when read.
            lazy = checked and idx.located and (found is not None or not query.rerank_terms)
            block = self._index_rows(query.agent_id, idx, slots, ids, found) if lazy else None
        chunks = scored_chunks(ids, fused)
        if block is not None:
            return indexed_result(chunks, notes, block)
        # Positions when found; none at all ({}: no "lex" read) when no reranker wants terms.
        positions = dict(zip(ids, found, strict=True)) if found is not None else None
        wanted = ids if query.rerank_terms else shown(ids, fused.scores, query.limit, one_scope)
        terms = {} if not query.rerank_terms else positions
        if checked:
            rows = self._rows(query.agent_id, wanted, terms)
        else:
            rows, now = self._rows_and_token(query.agent_id, wanted, terms)
            if now != token:
                return None
        return SearchResult(chunks, notes, rows)

    def _filter_mask(self, query: SearchQuery, token: str, idx: SearchIndex, mask: Any) -> Any:
        """``mask`` narrowed to the chunks ``query.filter`` lets through."""
        assert query.filter is not None
        rows = self.facets.rows(self.engine, query.agent_id, token)
        keep = np.isin(idx.ids[: idx.n], allowed_ids(rows, query.filter, query.users))
        return keep if mask is None else mask & keep

    def _index_rows(
        self, agent_id: str, idx: SearchIndex, slots: Any, ids: list[int], found: Sequence[Any] | None
    ) -> RowBlock:
        """The results' rows from the index (locations, user ids, the query terms' positions
        ``found``), their text read in one query when first read (:class:`ChunkTexts`; the
        memory service reads the returned hits' texts at once)."""
        names = {code: user for user, code in idx.scopes.items()}
        users = list(map(names.__getitem__, idx.scope[slots].tolist()))
        paths = list(map(idx.paths.__getitem__, idx.loc_path[slots].tolist()))
        held = dict(zip(ids, idx.fp[slots].tolist(), strict=True))
        texts = ChunkTexts(functools.partial(self._held_texts, agent_id, held), ids)
        return RowBlock(
            ids, users, paths, idx.loc_start[slots].tolist(), idx.loc_end[slots].tolist(), found, texts
        )

    def _held_texts(self, agent_id: str, held: Mapping[int, int], ids: Sequence[int]) -> dict[int, str]:
        """The texts of these chunks while they are the ones the index held (``held``: id ->
        fingerprint); an id left out was deleted, or now numbers another chunk (SQLite numbers
        new chunks from the largest id + 1, so a changed last file's chunks take its old ids):
        both read as deleted. The fingerprint's vector bit is not compared (an embedding added
        since leaves the text as it was)."""
        out: dict[int, str] = {}
        for cid, (body, chash, user) in self._texts(agent_id, ids).items():
            if fingerprint(chash or "", user or "", False) >> 1 == held[cid] >> 1:
                out[cid] = body
        return out

    def _texts(self, agent_id: str, ids: Sequence[int]) -> dict[int, tuple[str, str, str]]:
        """``id -> (text, chunk hash, user id)`` of the agent's chunks with these ids (deleted
        ones left out)."""
        out: dict[int, tuple[str, str, str]] = {}
        for at in range(0, len(ids), LOOKUP):
            part = ids[at : at + LOOKUP]
            marks = ",".join("?" * len(part))
            sql = (
                "SELECT id, text, chunk_hash, user_id FROM memory_chunks "
                f"WHERE +agent_id = ? AND id IN ({marks})"
            )
            out.update((int(i), (t, h, u)) for i, t, h, u in self._query(sql, [agent_id, *part]))
        return out

    def _rows_and_token(
        self, agent_id: str, ids: Sequence[int], positions: Mapping[int, Mapping[str, Sequence[int]]] | None
    ) -> tuple[dict[int, ChunkRow], str]:
        """:meth:`_rows` and the agent's version token as :meth:`_token` reads it, in one round
        trip (only where ``_token_with_rows``)."""
        return self._rows(agent_id, ids, positions), self._token(agent_id)

    def open(self, source: IndexSource) -> None:
        return None  # this plugin's own table is read directly (the same package)

    def rows(self, agent_id: str, ids: Sequence[int]) -> dict[int, ChunkRow]:
        return self._rows(agent_id, ids, None)

    def _rows(
        self, agent_id: str, ids: Sequence[int], positions: Mapping[int, Mapping[str, Sequence[int]]] | None
    ) -> dict[int, ChunkRow]:
        """Rows by id, with their terms (``lex``) or, given them, the query terms' positions."""
        out: dict[int, ChunkRow] = {}
        ids = list(ids)
        lex = "lex" if positions is None else "NULL"
        for at in range(0, len(ids), LOOKUP):
            part = ids[at : at + LOOKUP]
            marks = ",".join("?" * len(part))
            for cid, user, path, start, end, body, lex_terms in self._query(
                f"SELECT id, user_id, path, start_line, end_line, text, {lex} FROM memory_chunks "
                # "+agent_id": look the ids up by primary key and only check the agent; with a
                # plain "agent_id = ?" SQLite walks the agent's whole scope index (10k chunks:
                # 1.2 ms instead of 0.13 ms for 60 rows; 10x that at 100k).
                f"WHERE +agent_id = ? AND id IN ({marks})",
                [agent_id, *part],
            ):
                terms = (
                    positions.get(cid) if positions is not None else lex_terms.split() if lex_terms else None
                )
                out[cid] = make_row(cid, user, path, start, end, body, terms)
        return out

    def prepare_vectors(self, dim: int) -> None:
        return None

    def invalidate(self, agent_id: str | None = None) -> None:
        """Drop the agent's loaded index and its saved copy (its terms and user ids must not
        outlive a ``forget``); the next search rebuilds it from the table."""
        self.facets.drop(agent_id)
        with self._lock:
            self.invalidations += 1  # before any deletion: saves failing from now on know why
            if agent_id is None:
                dropped = list(self._states.values())
                self._states.clear()
            else:
                one = self._states.pop(agent_id, None)
                dropped = [one] if one is not None else []
        for st in dropped:
            with st.lock:  # a save under way finishes first; a later one sees the flag
                st.dropped = True
        if agent_id is None:
            if self.snapshot_dir is not None:
                shutil.rmtree(self.snapshot_dir, ignore_errors=True)
        else:
            self.discard_saved(agent_id)

    def wait_background(self, timeout: float | None = None) -> bool:
        """Wait for the work index runs left to the background (a large run's passage sketches
        and the save of its index: :mod:`goclaw_memory.deferred_sketches`); ``False`` when
        ``timeout`` (seconds) passed first. Searches never need it: the index is complete when
        ``index()`` returns."""
        return self.sketch_jobs.wait(timeout)

    def close(self) -> None:
        self.sketch_jobs.wait()  # their sketches go into the saved index (next processes load it)
        with self._lock:
            conns, self._conns = self._conns, []
            self._states.clear()
            self._local = threading.local()
        for conn in conns:
            conn.close()

    def apply_changes(self, changes: IndexChanges) -> None:
        """Patch the agent's loaded index with an index run's writes; save it after a large
        change (or when no saved index exists yet), so the next process starts fast."""
        if not changes.removed and not changes.records:
            return
        agent_id = changes.agent_id
        st = self._states.get(agent_id)
        first, last = changes.version_before, changes.version_after
        if st is not None and changes.complete and st.token == first and last:
            with st.lock:
                st.index.remove(changes.removed)
                added = self._add_records(agent_id, st, list(changes.records.values()))
                st.token = last
                st.unsaved += len(changes.removed) + added
                self.patches += 1
        if st is None and not first and changes.complete and last:
            # The agent's first index run: the changes are its whole content.
            st = self._fresh_state(agent_id, changes)
        path = self._snapshot(agent_id)
        if path is None:
            return
        if st is None and path.exists() and len(changes.removed) + len(changes.records) < SAVE_DELTA:
            return  # a reader reconciles this small change cheaply
        if self._unsaveable:
            return  # the last save failed: not again before RETRY_SAVE
        if st is None or st.unsaved >= SAVE_DELTA or not path.exists():
            if st is None or st.token != last:
                # Current as of the run's last version otherwise (built or patched above): no
                # token read, which on a fresh connection, beside a sketch job and the WAL
                # checkpoint, takes up to 0.3 s of a 10,000-chunk run.
                self._state(agent_id, changes.space or (st.space if st else None))
            self.save(agent_id)


def _no_vectors_note(space: Space | None) -> str:
    where = f"{space[0]}/{space[1]} ({space[2]}-d)" if space else "the configured embedder"
    return (
        f"no indexed chunk has a vector from {where} (the embedding provider changed, or indexing "
        "ran without it); run `goclaw memory index` to embed them; full-text results only"
    )
