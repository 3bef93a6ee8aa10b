"""The PostgreSQL search backend: the in-memory engine's exact fused ranking, computed from
the database; a process holds nothing per agent but a bounded cache of recently read posting
lists.

* Full text: the query terms' packed postings (:mod:`goclaw_memory.pg_postings`), one row per
  term and user of the scope, fetched in one round trip and scored by numpy: the exact BM25 (k1
  1.2, b 0.75) of every chunk holding a query term, from the agent's own statistics
  (``memory_term_stats`` / ``memory_agent_stats``). Postings and statistics are kept by
  triggers in the writing transaction, installed at this backend's first use: the engine's
  figures, not estimates.
* Vectors: pgvector, an exact scan for small agents, HNSW with iterative scans for large ones;
  every candidate of either channel gets its real cosine, computed in the database.
* :func:`goclaw_memory.pg_exact.budget` decides how many of the best by BM25 need a cosine: until
  no chunk left out can reach the result; then :func:`goclaw_search.fusion.fuse`.
* The winners' rows come with what the reranker reads: the query terms' positions (found in
  their stored terms, :func:`goclaw_search.rerank.lex_positions`, for the likely winners while
  the vector statements run) and, when the passage step reads sketches, their passage sketches
  (:mod:`goclaw_memory.pg_sketches`, joined in the same statement and kept in a small cache
  that :meth:`PostgresSearchBackend.chunk_sketches` answers from).
* The reads go through the thread's two direct connections (:mod:`goclaw_memory.pg_direct`):
  no pool checkout, no transaction, results in binary. Lane 1 runs the vector statements, sent
  first in a hybrid search; lane 0 meanwhile reads the statistics and postings (one statement,
  so they agree with each other under concurrent writes), the best's cosines and the likely
  winners' rows. A packed chunk is read by id when the process holds its ordinal's chunk id
  (:class:`goclaw_memory.pg_postings.OrdIds`, in the list cache: all of them, sent with the
  postings to the generation's first hybrid search), else by ordinal through ``memory_ords``
  (an index descent per ordinal, most of what reading the best's cosines cost). A chunk
  deleted in between is left out. A read by ordinal also checks the agent's generation: after
  a compaction that renumbered the agent in between, its ordinals name other chunks, and the
  search starts again. Lane 1 gets the one vector statement (exact scan or HNSW) the agent's
  last known size calls for; in a hybrid search its HNSW walk explores as many candidates as
  it returns (the postings' best get exact cosines anyway).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from sqlalchemy import text

from goclaw.contracts.search import (
    ChunkRow,
    IndexChanges,
    ScoredChunk,
    SearchBackend,
    SearchQuery,
    SearchResult,
    Space,
)
from goclaw.errors import GoclawError, StoreError
from goclaw_memory.filters import FacetCache, allowed_ids, read_facet_rows
from goclaw_memory.pg_direct import direct
from goclaw_memory.pg_exact import EXACT_VECTOR_SCAN, SCAN_RATIO, exact_line, idf, settled
from goclaw_memory.pg_postings import FETCH, ListCache, Lists, OrdIds, compact_if_due, fetched, scores
from goclaw_memory.pg_sketches import JOIN as SKETCH_JOIN
from goclaw_memory.pg_sketches import SketchCache, space_key
from goclaw_memory.pg_text import K1
from goclaw_memory.search_rows import make_row
from goclaw_memory.version_token import VERSION_WORKER, parse_token
from goclaw_search.fusion import fuse
from goclaw_search.passage_sketches import sketch_cosines, token_dots
from goclaw_search.pg_reads import int_array
from goclaw_search.rerank import lex_positions, positions_matches

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

log = logging.getLogger(__name__)

__all__ = ["PostgresSearchBackend", "make_postgres_backend"]


class PostgresSearchBackend(SearchBackend):
    """Exact hybrid search computed by PostgreSQL (see the module docstring)."""

    name = "postgresql"
    filters = True  # query.filter narrows every candidate query in SQL (goclaw_memory.filters)

    def __init__(self, engine: Host) -> None:
        self.engine = engine
        self._prepared: set[int] = set()
        self._deferred: set[int] = set()
        self._bulk = 0  # open bulk_load() blocks
        self._lock = threading.Lock()
        self._iterative: bool | None = None
        self._installed = False  # the statistics triggers are known to be installed
        self.facets = FacetCache()  # each agent's chunk tags, dates and paths, for filters
        budget = getattr(engine.plugin_settings("memory"), "pg_list_cache_mb", 64.0)
        self.lists = ListCache(float(budget))  # recently read packed lists
        self.sketches = SketchCache(SKETCHES_KEPT)  # the passage sketches the last searches read
        self._sketching: dict[tuple[Any, ...], bool] = {}
        self._sizes: dict[str, int] = {}  # each agent's chunk count at its last full-text read
        self._rows_read: tuple[float, float] | None = None  # (when, the chunk table's rows)

    # ------------------------------------------------------------------ search
    def search(self, query: SearchQuery) -> SearchResult:
        """The engine's fused ranking (:meth:`_search`), asked again when a compaction renumbered
        the agent's ordinals between the search's postings and a read by ordinal (the postings
        are then another generation's: read afresh, they rank as before the race)."""
        for _attempt in range(RENUMBERED_RETRIES):
            try:
                return self._search(query)
            except _Renumbered:
                continue
        raise StoreError(
            f"memory search: agent {query.agent_id}'s ordinals were renumbered during each of "
            f"{RENUMBERED_RETRIES} attempts (compactions running back to back); try again"
        )

    def _search(self, query: SearchQuery) -> SearchResult:
        """The engine's fused ranking, read from the database: the statistics and the query
        terms' packed postings (one statement); in a hybrid search, the nearest chunks by
        vector (on lane 1, meanwhile), the ids and cosines of the best by BM25, more until the
        fused top is settled (:func:`goclaw_memory.pg_exact.settled`); the winners' rows (in a
        hybrid search mostly read before the nearest chunks are in)."""
        cfg = self.engine.plugin_settings("memory")
        pool = max(int(cfg.min_candidates), int(cfg.candidate_factor) * query.limit)
        notes: list[str] = []
        users = list(query.users)
        want_lex = query.channel in ("hybrid", "lexical") and bool(query.terms)
        want_vec = (
            query.channel in ("hybrid", "vector") and query.vector is not None and query.space is not None
        )
        f = query.fusion
        a = query.agent_id
        read = _RowRead(query.rerank_terms, self._sketch_key(query) if want_lex and want_vec else None)
        terms = list(dict.fromkeys(query.terms)) if want_lex else []
        self.ensure_installed()
        only = None
        if query.filter is not None:
            with self.engine.db.engine.connect() as c:
                only = allowed_ids(self._facet_rows(c, a), query.filter, users)
        vec_sql = self._vector_sql(query, users, max(pool, query.wanted), only) if want_vec else []
        reads = direct(self.engine)
        # The vector statements run on the thread's second connection (lane 1, custom plans:
        # a generic plan of the HNSW statement scans the scope instead). In a hybrid search
        # they are sent first and the server runs them while lane 0 (generic plans: no planning
        # per search) reads and scores the postings and reads the best's cosines.
        vec_lane = direct(self.engine, 1) if want_vec else None
        parallel = want_vec and want_lex
        with vec_lane.sent(vec_sql, binary=True) if vec_lane and parallel else _no_lane() as vec_rows:
            statements: list[tuple[str, Sequence[Any]]] = []
            held = self.lists.held(a, terms, users) if want_lex else (None, {})
            if want_lex:
                pairs = list(held[1])
                params = (a, terms, users, held[0], [t for t, _u in pairs], [u for _t, u in pairs])
                # A hybrid search reads its best by chunk id: every ordinal's id comes with the
                # postings once per generation (~14 ms at 100k chunks, once).
                lacks = parallel and not self.lists.holds_ids(a, held[0])
                ids_asked = (parallel, a, a, held[0], lacks)
                statements.append((FETCH, (*params, a, terms, users, a, a, a, a, terms, *ids_asked)))
            if only is not None:
                statements.append((_ONLY_ORDS, (a, int_array(only.tolist()), a)))
            got = reads.queries(statements, binary=True) if statements else []
            lists = fetched(got.pop(0), self.lists, a, terms, users, held) if want_lex else Lists()
            if want_lex:
                if len(self._sizes) > 10_000:  # bounded, whatever the number of agents
                    self._sizes.clear()
                self._sizes[a] = lists.chunks
            allowed = None
            if only is not None:
                found_ords = got.pop(0)
                if any(r[0] == -2 and r[1] != lists.generation for r in found_ords):
                    raise _Renumbered
                ords_only = [r[0] for r in found_ords if r[0] != -2]
                allowed = (np.sort(np.array(ords_only, dtype=np.int64)), only)
            n = float(max(lists.chunks, 1))
            avgdl = lists.total / n if lists.chunks else 1.0
            df = lists.df
            times = dict(zip(query.terms, query.counts(), strict=True))
            weights = {t: times[t] * idf(df[t], n) * (K1 + 1) for t in terms if t in df}
            sc = scores(lists, weights, avgdl, allowed)
            known = self.lists.ord_ids(a, lists.generation, lists.n_ords) if want_lex else None
            if known is not None and lists.ord_ids is not None:
                known.fill(lists.ord_ids)
            cands = Candidates(known, lists.generation if want_lex else None)
            m = max(pool, query.wanted) * (BEST_FACTOR if want_vec else 1)
            best = None
            boost_on = len(users) > 1 and f.user_boost != 1.0
            have: dict[int, tuple[Any, ...]] = {}
            positions: dict[int, Any] = {}  # the query terms' occurrences in rows read, by chunk id
            if parallel and weights:  # the best's cosines and likely winners' rows meanwhile
                best = sc.best(m + 1)
                cands.extend(reads, query, best[0][:m], best[1][:m], fetch=True)
                # The fused top of these alone: with weighted fusion the nearest chunks can
                # only add to it, so its rows are most of the winners' (the rest read below).
                likely = _fuse(query, pool, *_channels(cands, sc, want_lex, True, boost_on, f))
                have = cands.rows(reads, a, [s.slot for s in likely], read)
                positions = _positions(query, read, have.values(), positions)  # meanwhile too
            # The vector statements' rows: the settings, then the exact scan and HNSW (one ran).
            if vec_lane is None:
                vec_got: list[Any] = []
            elif parallel:
                vec_got = vec_rows()
            else:
                vec_got = vec_lane.queries(vec_sql, binary=True)
        nearest = [r for got_rows in vec_got[1:] for r in got_rows] if want_vec else []
        if want_vec and not nearest and vec_lane is not None and len(vec_sql) == 2:
            # One statement was sent for the size the agent had; it may have crossed the line.
            vec_sql = self._vector_sql(query, users, max(pool, query.wanted), only, "both")
            nearest = [r for got_rows in vec_lane.queries(vec_sql, binary=True)[1:] for r in got_rows]
        cands.add_rows((-1 if o is None else o, i, u, cos) for i, o, u, cos in nearest)
        cands.learn([(r[1], r[0]) for r in nearest if r[1] is not None])
        rest_cosine = 0.0
        if len(nearest) >= max(pool, query.wanted):  # else every vector of the scope was read
            rest_cosine = min(float(r[3]) for r in nearest)
        if want_vec and not nearest:
            with self.engine.db.engine.connect() as c:
                note = self._no_vectors(c, query, users)
            if note:
                notes.append(note)
        cosine = want_vec and bool(nearest)
        if not cosine:
            m, best = max(pool, query.wanted), None
        lexical = vector = boost = None
        while True:
            if weights:
                ords, ids, bm = best if best is not None else sc.best(m + 1)
                best = None
                rest_bm25 = float(bm[m]) if len(bm) > m else 0.0
                cands.extend(reads, query, ords[:m], ids[:m], fetch=cosine or boost_on)
            lexical, vector, boost = _channels(cands, sc, want_lex, cosine, boost_on, f)
            if not weights or not len(cands):
                break
            if settled(
                lexical if lexical is not None else np.zeros(len(cands)),
                vector,
                rest_bm25=rest_bm25,
                rest_cosine=rest_cosine,
                k=query.wanted,
                method=f.method,
                text_weight=f.text_weight,
                vector_weight=f.vector_weight,
                boost=boost,
                pool=pool,
            ):
                break
            m *= 4
        if not len(cands):
            return SearchResult([], notes)
        scored = _fuse(query, pool, lexical, vector, boost)
        missing = [s.slot for s in scored if s.slot not in have]
        got = {**have, **cands.rows(reads, a, missing, read)} if missing else have
        if read.sketches is not None:
            self.sketches.put(a, read.sketches, [(r[0], r[7]) for r in got.values()])
        rows = _chunk_rows(got, query, _positions(query, read, got.values(), positions))
        chunks = [
            ScoredChunk(rows[s.slot].id, s.score, s.lexical, s.vector) for s in scored if s.slot in rows
        ]
        return SearchResult(chunks, notes, {r.id: r for r in rows.values()})

    def _sketch_key(self, query: SearchQuery) -> str | None:
        """The space key of the sketches a hybrid search reads with its rows: when the passage
        step reads them (:func:`goclaw_memory.passage_sketch.sketching`); else None."""
        if query.channel != "hybrid" or query.space is None:
            return None
        cfg = self.engine.plugin_settings("memory")
        try:
            embedder = self.engine.embedder()
        except GoclawError:  # the search reports a broken embedder itself
            return None
        key = (query.space, cfg.rerank, cfg.rerank_passages, cfg.fusion, id(embedder))
        on = self._sketching.get(key)
        if on is None:  # a protocol check costs ~20 us: once per setting, embedder and space
            from goclaw_memory.passage_sketch import sketching

            on = sketching(self.engine, query.space) is not None
            if len(self._sketching) > 64:
                self._sketching.clear()
            self._sketching[key] = on
        return space_key(query.space) if on else None

    def chunk_sketches(self, agent_id: str, ids: Sequence[int], space: Space) -> Any:
        """The passage sketches of these chunks that the last searches read with their rows
        (:mod:`goclaw_memory.pg_sketches`); a chunk not among them has none."""
        return self.sketches.batch(agent_id, ids, space_key(space))

    def passage_cosines(self, agent_id: str, ids: Sequence[int], space: Space, matrix: Any, q: Any) -> Any:
        """:meth:`chunk_sketches` scored in one call (``PassageCosineBackend``): each chunk's best
        passage cosine with the unit query ``q`` and whether it has a sketch."""
        batch = self.sketches.batch(agent_id, ids, space_key(space))
        dots = token_dots(matrix, q, batch.tokens) if len(batch.tokens) else np.zeros(0, np.float32)
        return sketch_cosines(batch, dots), batch.has

    @staticmethod
    def _rows(c: Any, agent_id: str, ids: Sequence[int]) -> dict[int, ChunkRow]:
        if not ids:
            return {}
        result = c.execute(
            text(
                "SELECT id, user_id, path, start_line, end_line, text, lex FROM memory_chunks "
                "WHERE agent_id = :a AND id = ANY(:ids)"
            ),
            {"a": agent_id, "ids": [int(i) for i in ids]},
        ).all()
        return {
            int(r[0]): ChunkRow(int(r[0]), r[1], r[2], int(r[3]), int(r[4]), r[5], _terms_of(r[6]))
            for r in result
        }

    def _no_vectors(self, c: Any, query: SearchQuery, users: list[str]) -> str | None:
        assert query.space is not None
        provider, model, dim = query.space
        row = c.execute(
            text(
                "SELECT count(*), count(*) FILTER (WHERE embedding_provider = :p AND embedding_model = :m "
                "AND embedding_dim = :d) FROM memory_chunks WHERE agent_id = :a AND user_id = ANY(:users)"
            ),
            {"p": provider, "m": model, "d": int(dim), "a": query.agent_id, "users": users},
        ).first()
        if row is None or not row[0] or row[1]:
            return None
        return (
            f"no indexed chunk has a vector from {provider}/{model} ({dim}-d) (the embedding provider "
            "changed, or indexing ran without it); run `goclaw memory index` to embed them"
        )

    def rows(self, agent_id: str, ids: Sequence[int]) -> dict[int, ChunkRow]:
        with self.engine.db.engine.connect() as c:
            return self._rows(c, agent_id, ids)

    def invalidate(self, agent_id: str | None = None) -> None:
        # The table is the index: only the filters' facets and the sketches read are kept.
        self.facets.drop(agent_id)
        self.sketches.drop(agent_id)

    def _facet_rows(self, c: Any, agent_id: str) -> list[Any]:
        """The agent's facet rows for filters, read again only when its index version token
        changed (every write of its chunks gives a new one); without a token, read afresh."""
        value = c.execute(
            text("SELECT value FROM worker_state WHERE worker = :w AND scope = :s"),
            {"w": VERSION_WORKER, "s": agent_id},
        ).scalar()
        token = parse_token(value)
        if not token:
            return read_facet_rows(self.engine, agent_id)
        return self.facets.rows(self.engine, agent_id, token)

    def apply_changes(self, changes: IndexChanges) -> None:
        """The tables are the index: folds the statistics rows the run appended
        (:func:`goclaw_memory.pg_stats.fold_changes`), compacts the agent's postings when their
        delta grew large (:func:`goclaw_memory.pg_postings.compact_if_due`), stores the passage
        sketches of the chunks it embedded when the passage step reads them
        (:func:`goclaw_memory.pg_sketches.write`) and builds the HNSW indexes the run's
        :meth:`prepare_vectors` deferred, once after the load."""
        from goclaw_memory.pg_stats import fold_changes

        if not self.ensure_installed():
            fold_changes(self.engine, changes)
            if changes.removed or changes.records:
                compact_if_due(self.engine, changes.agent_id)
        self._write_sketches(changes)
        self.finish_vectors()

    def _write_sketches(self, changes: IndexChanges) -> None:
        from goclaw_memory.passage_sketch import sketcher
        from goclaw_memory.pg_sketches import write

        embedded = [r for r in changes.records.values() if r.vector is not None and r.space == changes.space]
        make = sketcher(self.engine, changes.space) if embedded else None
        if make is None or changes.space is None:
            return
        try:
            write(self.engine, changes.agent_id, embedded, changes.space, make)
        except Exception:  # a sketch missing costs the passage step's speed, never the indexing
            log.warning("passage sketches not stored; the passage step reads the text", exc_info=True)

    def ensure_installed(self) -> bool:
        """Install the statistics and postings triggers when this database lacks them (only
        this backend needs them: other backends' writes do not pay for them), counting every
        chunk; once per backend. True when it installed them (nothing left to fold). A
        read-only server (a replica) cannot install them: a StoreError says where to, or to
        search with ``inprocess`` instead."""
        if self._installed:
            return False
        from goclaw_memory.pg_stats import install, missing_triggers

        with self.engine.db.engine.connect() as conn, conn.begin():
            if not missing_triggers(conn):
                self._installed = True
                return False
            if conn.execute(text("SELECT current_setting('transaction_read_only')")).scalar() == "on":
                from goclaw.errors import StoreError

                raise StoreError(
                    "memory backend 'postgresql' (the default on PostgreSQL) needs its statistics "
                    "triggers, which this read-only database (a replica?) lacks: run `goclaw memory "
                    'doctor --repair` with backend = "postgresql" against the primary once, or set '
                    '[plugins.memory] backend = "inprocess" here (the in-process engine, an index '
                    "per process)"
                )
            # One installer at a time across processes; the others find them installed.
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": 0x60C1A5})
            done = bool(missing_triggers(conn))
            if done:
                install(conn.exec_driver_sql)
        if done:  # tables just filled: the planner's figures for them, before the first search
            from goclaw_memory.pg_stats import analyze

            with self.engine.db.engine.connect() as conn:
                analyze(conn.exec_driver_sql)
                conn.commit()
        self._installed = True
        return done

    # ------------------------------------------------------------------ vectors
    def _supports_iterative(self) -> bool:
        if self._iterative is None:
            with self.engine.db.engine.connect() as conn:
                row = conn.execute(
                    text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
                ).first()
            version = tuple(int(p) for p in re.findall(r"\d+", str(row[0]))[:2]) if row else (0, 0)
            self._iterative = version >= (0, 8)
        return self._iterative

    def prepare_vectors(self, dim: int) -> None:
        """Note a dimension about to be written. A missing HNSW index is not created here but
        by :meth:`finish_vectors` after the load: building it over loaded rows is ~10x faster
        than maintaining it on every insert (pgvector's own advice). Until then, and if a
        load is interrupted, searches scan exactly (correct, slower) and the next indexing
        run builds the index."""
        dim = int(dim)
        if dim in self._prepared:
            return
        with self._lock:
            if dim > 2000:
                # pgvector's HNSW indexes at most 2,000 dimensions: exact scan for larger models.
                self._prepared.add(dim)
                return
            with self.engine.db.engine.connect() as conn:
                found = conn.execute(
                    text("SELECT to_regclass(quote_ident(current_schema()) || '.' || :n)"),
                    {"n": _hnsw_name(dim)},
                ).scalar()
            if found is not None:
                self._prepared.add(dim)
            else:
                self._deferred.add(dim)

    @contextmanager
    def bulk_load(self, dim: int) -> Iterator[None]:
        """Drop ``dim``'s HNSW index for a large load and build it once afterwards.

        Inserting into an existing HNSW graph costs milliseconds a row (a 5,000-chunk agent
        added next to 100,000 indexed chunks loaded at 170 chunks/s); a rebuild over
        everything takes ~30 s per 100,000. Opt-in (``goclaw memory index --bulk``) because
        every agent's vector search of that dimension scans exactly until the build ends."""
        dim = int(dim)
        if dim > 2000:  # never indexed
            yield
            return
        with self.engine.db.engine.connect() as conn, conn.begin():
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": 0x60C1A4})
            conn.exec_driver_sql(f"DROP INDEX IF EXISTS {_hnsw_name(dim)}")
        with self._lock:
            self._prepared.discard(dim)
            self._deferred.add(dim)
            self._bulk += 1
        try:
            yield
        finally:
            with self._lock:
                self._bulk -= 1
            self.finish_vectors()

    def finish_vectors(self) -> None:
        """Build the HNSW indexes :meth:`prepare_vectors` deferred (called after a load;
        held back while a :meth:`bulk_load` is open)."""
        with self._lock:
            if self._bulk:
                return
            for dim in sorted(self._deferred):
                with self.engine.db.engine.connect() as conn, conn.begin():
                    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": 0x60C1A4})
                    rows = conn.execute(
                        text("SELECT count(*) FROM memory_chunks WHERE embedding_dim = :d"), {"d": dim}
                    ).scalar_one()
                    # Room for the whole graph in memory (else pgvector builds on disk, ~4x
                    # slower); never below the server's setting, at most 1 GiB.
                    want = min(1 << 30, max(64 << 20, int(rows * (dim * 4 + 400) * 1.3)))
                    conn.execute(
                        text(
                            "SELECT set_config('maintenance_work_mem', (greatest(pg_size_bytes("
                            "current_setting('maintenance_work_mem')), :w) / 1024)::bigint || 'kB', true)"
                        ),
                        {"w": want},
                    )
                    conn.exec_driver_sql(
                        f"CREATE INDEX IF NOT EXISTS {_hnsw_name(dim)} ON memory_chunks "
                        f"USING hnsw ((embedding::vector({dim})) vector_cosine_ops) "
                        f"WHERE embedding_dim = {dim}"
                    )
                self._prepared.add(dim)
            self._deferred.clear()

    def _exact_line(self) -> int:
        """:func:`goclaw_memory.pg_exact.exact_line` for the chunk table's size (the planner's
        estimate, read again every few minutes)."""
        now = time.monotonic()
        if self._rows_read is None or now - self._rows_read[0] > ROWS_REREAD:
            with self.engine.db.engine.connect() as conn:
                rows = conn.execute(
                    text("SELECT reltuples FROM pg_class WHERE oid = to_regclass('memory_chunks')")
                ).scalar()
            self._rows_read = (now, max(float(rows or 0.0), 0.0))  # -1: never analyzed
        return exact_line(self._rows_read[1], EXACT_VECTOR_SCAN, SCAN_RATIO)

    def _vector_sql(
        self,
        query: SearchQuery,
        users: list[str],
        limit: int,
        only: np.ndarray | None,
        which: str | None = None,
    ) -> list[tuple[str, Sequence[Any]]]:
        """The statements for the nearest ``limit`` chunks of the scope (rows: id, ordinal or
        NULL in the delta, user, cosine), the last one's rows the answer: for an agent of at
        most :meth:`_exact_line` chunks an exact scan (its rows by the scope index; the
        ordering expression differs from the HNSW index's, so that index is not used), else
        HNSW with iterative scans. The agent's size (an InitPlan) lets one run; ``which``
        (``exact``, ``hnsw``, ``both``; default: what the agent's size at its last search calls
        for, both when unknown or near the line) says which are sent."""
        assert query.space is not None
        provider, model, dim = query.space
        dim = int(dim)
        q = np.asarray(query.vector, dtype=np.float32).reshape(-1)
        if not np.any(q):
            return [("SELECT 1", ())]
        # Same expression and (literal) predicate as the partial HNSW index, so it is usable.
        expr = f"(embedding::vector({dim})) <=> CAST(%s AS vector({dim}))"
        line = self._exact_line()
        size = f"(SELECT coalesce(sum(chunks), 0) FROM memory_agent_stats WHERE agent_id = %s) {{op}} {line}"

        def nearest(exact: bool) -> tuple[str, Sequence[Any]]:
            sql = (
                f"SELECT v.id, o.ord, v.user_id, v.s FROM (SELECT id, user_id, 1 - ({expr}) AS s "
                f"FROM memory_chunks WHERE embedding_dim = {dim} AND agent_id = %s AND user_id = ANY(%s) "
                f"AND embedding_provider = %s AND embedding_model = %s{'' if only is None else _ONLY} "
                f"AND {size.format(op='<=' if exact else '>')} "
                f"ORDER BY {f'({expr}) + 0' if exact else expr} LIMIT %s) AS v "
                "LEFT JOIN memory_ords o ON o.chunk_id = v.id"
            )
            chosen = [] if only is None else [int_array(only.tolist())]
            params = [q, query.agent_id, users, provider, model, *chosen]
            return sql, (*params, query.agent_id, q, int(limit))

        # HNSW explores `ef` candidates: at least the LIMIT (else fewer rows come back without
        # iterative scans), and more finds more of the exact nearest neighbours at ~1 us a
        # buffer visited. In a hybrid search the nearest chunks only add candidates to those
        # the postings bring, whose cosines are read exactly, so ef = LIMIT keeps the fused top
        # equal to the exact one at half the walk of 2 x LIMIT + 40; the vector channel alone
        # returns HNSW's neighbours as its answer and explores 2 x LIMIT + 40.
        configured = int(getattr(self.engine.plugin_settings("memory"), "hnsw_ef_search", 0) or 0)
        if configured:
            ef = max(int(limit), configured)
        else:
            ef = int(limit) if query.channel == "hybrid" else 2 * int(limit) + 40
        # No parallel workers: starting them costs milliseconds, also for the statement whose
        # one-time filter (the agent's size) says it has nothing to do. Session settings of the
        # direct connection (its reads run in no transaction), set before every vector read.
        settings = (
            f"set_config('hnsw.ef_search', '{min(ef, 1000)}', false), "
            "set_config('max_parallel_workers_per_gather', '0', false)"
        )
        if self._supports_iterative():
            settings += ", set_config('hnsw.iterative_scan', 'relaxed_order', false)"
        # Both statements only when the agent's size is not known well away from the line:
        # the server plans every statement sent (~0.3-0.5 ms each), also one that never runs.
        size_known = self._sizes.get(query.agent_id) if which is None else None
        if which is None and size_known is not None:
            far = size_known > 2 * line or 2 * size_known < line
            which = ("exact" if size_known <= line else "hnsw") if far else "both"
        picked = [nearest(True)] if which == "exact" else [nearest(False)] if which == "hnsw" else []
        return [(f"SELECT {settings}", ()), *(picked or [nearest(True), nearest(False)])]


_ONLY = " AND id = ANY(%s::text::int8[])"  # a filtered search's chunks (goclaw_memory.filters)
# A filtered search's ordinals, and the agent's generation (in a row of ordinal -2): the FETCH
# before it in the pipeline ran in another snapshot, so a compaction may have come between.
_ONLY_ORDS = (
    "SELECT ord, NULL::int8 FROM memory_ords WHERE agent_id = %s AND chunk_id = ANY(%s::text::int8[]) "
    "UNION ALL SELECT -2, generation FROM memory_packed_agents WHERE agent_id = %s"
)
# A row of ordinal -2 when the agent's generation is no longer the search's (%s = agent,
# generation): joined to every read by ordinal, whose ordinals name other chunks after a
# renumbering compaction.
_RENUMBERED = "SELECT -2, -1{nulls} FROM memory_packed_agents WHERE agent_id = %s AND generation <> %s"
RENUMBERED_RETRIES = 3
# A hybrid search reads the cosines of this many times the candidates it keeps, best by BM25,
# in its first round: most searches are settled then (more rounds cost a statement each).
BEST_FACTOR = 4


class _Renumbered(Exception):
    """A read by ordinal found the agent renumbered since the search's postings."""


_COSINE = (
    "CASE WHEN c.embedding_dim = {dim} AND c.embedding_provider = %s AND c.embedding_model = %s "
    "THEN 1 - ((c.embedding::vector({dim})) <=> CAST(%s AS vector({dim}))) END"
)
_BY_ORD = (
    "FROM memory_ords o JOIN memory_chunks c ON c.id = o.chunk_id "
    "WHERE o.agent_id = %s AND o.ord = ANY(%s::text::int4[])"
)
_BY_ID = "FROM memory_chunks c WHERE c.agent_id = %s AND c.id = ANY(%s::text::int8[])"
# A result's row: where the chunk is, its text, its terms (or NULL) and its sketch (or NULL).
_ROWS_BY_ID = (
    "SELECT -1, c.id, c.user_id, c.path, c.start_line, c.end_line, c.text, {lex}, {sketch} "
    "FROM memory_chunks c{join} WHERE c.agent_id = %s AND c.id = ANY(%s::text::int8[])"
)
_ROWS_BY_ORD = (
    "SELECT o.ord, c.id, c.user_id, c.path, c.start_line, c.end_line, c.text, {lex}, {sketch} "
    "FROM memory_ords o JOIN memory_chunks c ON c.id = o.chunk_id{join} "
    "WHERE o.agent_id = %s AND o.ord = ANY(%s::text::int4[])"
)
ROWS_REREAD = 300.0  # seconds between reads of the chunk table's size (the exact-scan line)
SKETCHES_KEPT = 4096  # sketches a backend keeps of its last searches' rows


class _RowRead(NamedTuple):
    """What a search reads with its rows: their terms (for the reranker), their sketches (the
    space key of the sketches the passage step reads, or None)."""

    terms: bool
    sketches: str | None

    def sql(self, template: str) -> str:
        on = self.sketches is not None
        return template.format(
            lex="c.lex" if self.terms else "NULL::text",
            sketch="s.sketch" if on else "NULL::bytea",
            join=SKETCH_JOIN if on else "",
        )

    def params(self, agent_id: str, keys: list[int]) -> tuple[Any, ...]:
        keyed = int_array(keys)
        return (self.sketches, agent_id, keyed) if self.sketches is not None else (agent_id, keyed)


class Candidates:
    """The chunks a search scores, in slots: each with its ordinal (-1: in the delta), chunk id
    (-1: not read yet, a packed chunk of a full-text search), user and cosine. ``known``: the
    chunk ids of the agent's ordinals held at this search's generation (:class:`OrdIds`):
    those chunks are read by id, and what is read by ordinal is noted there."""

    def __init__(self, known: OrdIds | None = None, generation: int | None = None) -> None:
        self.known = known
        self.generation = generation  # the postings': reads by ordinal check it
        self._ords: list[int] = []
        self._ids: list[int] = []
        self.users: list[str] = []
        self._cos: list[float] = []
        self._slot_of_id: dict[int, int] = {}
        self._slot_of_ord: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def ords(self) -> np.ndarray:
        return np.array(self._ords, dtype=np.int64)

    @property
    def ids(self) -> np.ndarray:
        return np.array(self._ids, dtype=np.int64)

    @property
    def cosines(self) -> np.ndarray:
        return np.array(self._cos, dtype=np.float64)

    def add_rows(self, rows: Iterable[Sequence[Any]], ord_of: dict[int, int] | None = None) -> None:
        """A new slot for each ``(ordinal, chunk id, user, cosine or None)`` not here yet by its
        id or ordinal (a search adds a few hundred: one loop, no call per row); ``ord_of``: the
        ordinal of a chunk given at -1."""
        ids, ords, users, cos = self._ids, self._ords, self.users, self._cos
        by_id, by_ord = self._slot_of_id, self._slot_of_ord
        for o, i, u, c in rows:
            if o < 0 and ord_of:
                o = ord_of.get(i, -1)
            if i in by_id or o in by_ord:
                continue
            slot = len(ids)
            ids.append(i)
            ords.append(o)
            users.append(u)
            cos.append(0.0 if c is None else c)
            if i >= 0:
                by_id[i] = slot
            if o >= 0:
                by_ord[o] = slot

    def extend(
        self, reads: Any, query: SearchQuery, ords: np.ndarray, ids: np.ndarray, *, fetch: bool
    ) -> None:
        """Add the chunks given by ordinal (or, at -1, by id) not here yet; with ``fetch``, with
        their id, user and (in a hybrid search) cosine read from the database."""
        seen_ord, seen_id = self._slot_of_ord, self._slot_of_id
        ord_list, id_list = ords.tolist(), ids.tolist()  # Python ints: no numpy scalar per element
        new_ords = [o for o in ord_list if o >= 0 and o not in seen_ord]
        new_ids = [i for o, i in zip(ord_list, id_list, strict=True) if o < 0 and i not in seen_id]
        ord_of: dict[int, int] = {}  # a packed chunk read by its known id: its ordinal
        if fetch and new_ords and self.known is not None:
            wanted = np.array(new_ords, np.int64)
            found = self.known.of(wanted)
            hit = found >= 0
            ord_of = dict(zip(found[hit].tolist(), wanted[hit].tolist(), strict=True))
            new_ids += [i for i in ord_of if i not in seen_id]
            new_ords = wanted[~hit].tolist()
        if not fetch:
            self.add_rows([(o, -1, "", 0.0) for o in new_ords])
            self.add_rows([(-1, i, "", 0.0) for i in new_ids])
            return
        if not new_ords and not new_ids:
            return
        cos, params = "NULL::float8", []
        if query.vector is not None and query.space is not None and query.channel != "lexical":
            provider, model, dim = query.space
            cos = _COSINE.format(dim=int(dim))
            params = [provider, model, np.asarray(query.vector, dtype=np.float32).reshape(-1)]
        a = query.agent_id
        by_ord, by_id = (*params, a, int_array(new_ords)), (*params, a, int_array(new_ids))
        got = _union(
            reads,
            (f"SELECT o.ord, c.id, c.user_id, {cos} {_BY_ORD}", by_ord, bool(new_ords)),
            (f"SELECT -1, c.id, c.user_id, {cos} {_BY_ID}", by_id, bool(new_ids)),
            self._guard(a, 2, bool(new_ords)),
        )
        self.add_rows(got, ord_of)
        self.learn([(r[0], r[1]) for r in got if r[0] >= 0])

    def _guard(self, agent_id: str, nulls: int, by_ord: bool) -> tuple[str, Sequence[Any], bool]:
        """The :data:`_RENUMBERED` part of a read by ordinal (``nulls``: its other columns)."""
        on = by_ord and self.generation is not None
        return _RENUMBERED.format(nulls=", NULL" * nulls), (agent_id, self.generation), on

    def learn(self, pairs: Sequence[tuple[int, int]]) -> None:
        """Note (ordinal, chunk id) pairs read in :attr:`known`."""
        if pairs and self.known is not None:
            self.known.learn([p[0] for p in pairs], [p[1] for p in pairs])

    def rows(
        self, reads: Any, agent_id: str, slots: Sequence[int], read: _RowRead
    ) -> dict[int, tuple[Any, ...]]:
        """The rows of these slots, by slot (a chunk deleted meanwhile has none): chunk id, user,
        path, start and end line, text, terms (None unless ``read.terms``) and sketch (None
        without one, or unless ``read.sketches``)."""
        if self.known is not None:  # packed chunks of a full-text search whose id is known
            unread = [s for s in slots if self._ids[s] < 0 and self._ords[s] >= 0]
            found = self.known.of(np.array([self._ords[s] for s in unread], np.int64))
            for s, i in zip(unread, found.tolist(), strict=True):
                if i >= 0 and i not in self._slot_of_id:
                    self._ids[s] = i
                    self._slot_of_id[i] = s
        ids = [self._ids[s] for s in slots if self._ids[s] >= 0]
        ords = [self._ords[s] for s in slots if self._ids[s] < 0]
        got = _union(
            reads,
            (read.sql(_ROWS_BY_ID), read.params(agent_id, ids), bool(ids)),
            (read.sql(_ROWS_BY_ORD), read.params(agent_id, ords), bool(ords)),
            self._guard(agent_id, 7, bool(ords)),
        )
        out: dict[int, tuple[Any, ...]] = {}
        for row in got:
            o, i = row[0], row[1]
            slot = self._slot_of_ord[o] if o >= 0 and i not in self._slot_of_id else self._slot_of_id[i]
            out[slot] = row[1:]
        self.learn([(r[0], r[1]) for r in got if r[0] >= 0])
        return out


def _channels(
    cands: Candidates, sc: Any, lexical_on: bool, cosine: bool, boost_on: bool, f: Any
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """The candidates' BM25, cosines (negative as 0) and user boosts, as fusion takes them."""
    lexical = sc.of(cands.ords, cands.ids) if lexical_on else None
    vector = np.maximum(cands.cosines, 0.0) if cosine else None
    boost = np.array([f.user_boost if u else 1.0 for u in cands.users]) if boost_on else None
    return lexical, vector, boost


def _fuse(
    query: SearchQuery,
    pool: int,
    lexical: np.ndarray | None,
    vector: np.ndarray | None,
    boost: np.ndarray | None,
) -> list[Any]:
    """The best ``query.wanted`` candidates by the query's fusion."""
    f = query.fusion
    return fuse(
        lexical.astype(np.float32) if lexical is not None else None,
        vector.astype(np.float32) if vector is not None else None,
        None,
        limit=query.wanted,
        method=f.method,
        text_weight=f.text_weight,
        vector_weight=f.vector_weight,
        boost=boost.astype(np.float32) if boost is not None else None,
        pool=pool,
    )


@contextmanager
def _no_lane() -> Iterator[Callable[[], list[Any]]]:
    """Stands for :meth:`~goclaw_search.pg_reads.DirectReads.sent` when nothing is sent."""
    yield list


def _union(reads: Any, *parts: tuple[str, Sequence[Any], bool]) -> list[tuple[Any, ...]]:
    """The rows of the wanted ``(sql, params, wanted)`` parts, one statement."""
    wanted = [(sql, params) for sql, params, on in parts if on]
    if not wanted:
        return []
    sql = " UNION ALL ".join(s for s, _p in wanted)
    got = reads.query(sql, [p for _s, params in wanted for p in params], binary=True)
    if any(r[0] == -2 for r in got):  # a guard's row: the agent's generation moved
        raise _Renumbered
    return got


def _positions(
    query: SearchQuery, read: _RowRead, rows: Iterable[tuple[Any, ...]], known: dict[int, Any]
) -> dict[int, Any]:
    """``known`` with the occurrences of the query's terms in these rows' terms
    (:func:`goclaw_search.rerank.lex_positions`) when the search reads terms."""
    if read.terms and query.terms:
        new = [r for r in rows if r[0] not in known]
        if new:
            terms = list(dict.fromkeys(query.terms))
            known.update(zip([r[0] for r in new], lex_positions(terms, [r[6] for r in new]), strict=True))
    return known


def _chunk_rows(
    got: dict[int, tuple[Any, ...]], query: SearchQuery, positions: dict[int, Any]
) -> dict[int, ChunkRow]:
    """The rows :meth:`Candidates.rows` read, by slot, as the service takes them; when the
    search reads terms, each with the query terms' positions in it (one batch of
    :class:`goclaw_search.rerank.TermMatches`: the reranker reads its features precomputed)."""
    rows = list(got.values())
    found: Sequence[Any]
    if positions:
        terms = list(dict.fromkeys(query.terms))
        found = positions_matches(query.terms, terms, [positions[r[0]] for r in rows])
    elif query.rerank_terms and rows:
        found = [{}] * len(rows)  # no query term (or no row): nothing to find
    else:
        found = [None] * len(rows)
    return {
        slot: make_row(int(r[0]), r[1], r[2], int(r[3]), int(r[4]), r[5], t)
        for slot, r, t in zip(got, rows, found, strict=True)
    }


def _terms_of(lex: str | None) -> list[str] | None:
    return lex.split() if lex is not None else None


def _hnsw_name(dim: int) -> str:
    return f"ix_memory_chunks_hnsw_{int(dim)}"


def make_postgres_backend(engine: Host) -> PostgresSearchBackend:
    if engine.db.backend != "postgresql":
        from goclaw.errors import ConfigError

        raise ConfigError("memory backend 'postgresql' needs a PostgreSQL database_url")
    return PostgresSearchBackend(engine)
