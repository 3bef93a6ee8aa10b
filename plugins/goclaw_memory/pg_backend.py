"""The PostgreSQL search backend: the in-memory engine's exact fused ranking, computed from
the database with nothing held per process.

* Full text: each query term's impact-ordered postings (``memory_postings``), read best first;
  BM25 (k1 1.2, b 0.75) comes from each chunk's stored terms (``lex``) and the agent's own
  statistics (``memory_term_stats`` / ``memory_agent_stats``); both kept by triggers in the
  writing transaction, installed at this backend's first use: the engine's figures, not
  estimates.
* Vectors: pgvector, an exact scan for small agents, HNSW with iterative scans for large ones;
  every candidate of either channel gets its real cosine, computed in the database.
* :mod:`goclaw_memory.pg_exact` decides how deep to read: until no unread chunk can reach the
  result; then :func:`goclaw_search.fusion.fuse`.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import text

from goclaw.contracts.search import (
    ChunkRow,
    IndexChanges,
    ScoredChunk,
    SearchBackend,
    SearchQuery,
    SearchResult,
)
from goclaw_memory.filters import FacetCache, allowed_ids, read_facet_rows
from goclaw_memory.pg_exact import EXACT_VECTOR_SCAN, TermStats, budget, idf
from goclaw_memory.pg_postings import FETCH, TOP_ONE, factor_bound, top_sql
from goclaw_memory.pg_text import K1, B, bm25_from_lex, tsquery_literal
from goclaw_memory.version_token import VERSION_WORKER, parse_token
from goclaw_search.fusion import fuse

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

log = logging.getLogger(__name__)

_ONLY = " AND id = ANY(:only)"  # a filtered search's chunks (goclaw_memory.filters)
# A search's transaction, in one round trip: one snapshot for every read, and room for the
# aggregation of the bounds (tens of thousands of chunks for common words at 100k chunks, 8 MB
# of hash table) in memory instead of spilled to disk at the default work_mem of 4 MB.
_BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL work_mem = '64MB'"

__all__ = ["K1", "B", "PostgresSearchBackend", "bm25_from_lex", "make_postgres_backend", "tsquery_literal"]


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

    # ------------------------------------------------------------------ search
    def search(self, query: SearchQuery) -> SearchResult:
        """The engine's fused ranking, read from the database (:mod:`goclaw_memory.pg_exact`):
        the agent's statistics, the nearest chunks by vector, the chunks of highest BM25
        bound from the postings (more until the result is settled), then the winners' rows;
        all in one read-only snapshot, so the figures and the rows agree under concurrent
        writes."""
        cfg = self.engine.plugin_settings("memory")
        pool = max(int(cfg.min_candidates), int(cfg.candidate_factor) * query.limit)
        notes: list[str] = []
        users = list(query.users)
        want_lex = query.channel in ("hybrid", "lexical") and bool(query.terms)
        want_vec = (
            query.channel in ("hybrid", "vector") and query.vector is not None and query.space is not None
        )
        f = query.fusion
        found: dict[int, tuple[str, str, float | None]] = {}  # id -> (user, lex, cosine)
        only = None  # the ids query.filter lets through: a condition of every candidate query
        self.ensure_installed()
        with self.engine.db.engine.connect() as c:
            c.exec_driver_sql(_BEGIN)
            try:
                if query.filter is not None:
                    only = allowed_ids(self._facet_rows(c, query.agent_id), query.filter, users).tolist()
                chunks_n, total_len, ref, stats = self._stats(
                    c, query.agent_id, query.terms if want_lex else ()
                )
                rest_cosine = 0.0
                if want_vec:
                    wanted = max(pool, query.wanted)
                    exact = chunks_n <= EXACT_VECTOR_SCAN
                    nearest = self._vector(c, query, users, wanted, exact=exact, only=only)
                    found.update(nearest)
                    if len(nearest) >= wanted:  # else every vector of the scope was read
                        rest_cosine = min(r[2] or 0.0 for r in nearest.values())
                    if not found:
                        note = self._no_vectors(c, query, users)
                        if note:
                            notes.append(note)
                n = float(max(chunks_n, 1))
                avgdl = total_len / n if chunks_n else 1.0
                idfs = {t: idf(st.df, n) for t, st in stats.items()}
                terms = query.terms if want_lex else ()
                # What each known term adds per unit of its BM25 factor (twice if twice asked).
                weights = {t: terms.count(t) * idfs[t] * (K1 + 1) for t in dict.fromkeys(terms) if t in idfs}
                rho = min(1.0, ref / avgdl) if avgdl > 0 else 1.0
                cosine = want_vec and bool(found)
                scores: dict[int, float] = {}
                ids_of = {t: stats[t].term_id for t in weights}
                ranked = Ranked(c, query, users, weights, ids_of, rho, cosine, only, first=2 * pool)
                df = {t: stats[t].df for t in weights}
                long = len(weights) > 1 and sum(df.values()) > CUT_ABOVE
                if long:
                    # The chunks of the rarest terms first: a budget to cut the long lists by.
                    rare = sorted(weights, key=lambda t: (df[t], t))[: len(weights) // 2]
                    rows = np.cumsum([df[t] for t in rare])  # the first always, then up to RARE_ROWS
                    some = {
                        t: weights[t]
                        for t, n in zip(rare, rows, strict=True)
                        if n <= RARE_ROWS or t == rare[0]
                    }
                    Ranked(c, query, users, some, ids_of, rho, cosine, only, first=pool).read(found)
                rest_bm25: float | None = None if weights else 0.0  # None: the postings not read yet
                while True:
                    ids = list(found)
                    for i in ids:
                        if i not in scores:
                            scores[i] = bm25_from_lex(found[i][1], terms, idfs, avgdl)
                    lexical = np.array([scores[i] for i in ids])
                    vector = (
                        np.array([max(0.0, found[i][2] or 0.0) for i in ids]) if want_vec and found else None
                    )
                    boost = None
                    if len(users) > 1 and f.user_boost != 1.0:
                        boost = np.array([f.user_boost if found[i][0] else 1.0 for i in ids])
                    room = budget(
                        lexical,
                        vector,
                        rest_cosine=rest_cosine,
                        k=query.wanted,
                        method=f.method,
                        text_weight=f.text_weight,
                        vector_weight=f.vector_weight,
                        boost=boost,
                        pool=pool,
                    )
                    if rest_bm25 is not None and (rest_bm25 <= 0 or rest_bm25 < room):
                        break
                    if rest_bm25 is None and long:
                        ranked.cut(room, df)
                    rest_bm25 = ranked.read(found)
                if not ids:
                    return SearchResult([], notes)
                scored = fuse(
                    lexical.astype(np.float32) if want_lex else None,
                    vector.astype(np.float32) if vector is not None else None,
                    None,
                    limit=query.wanted,
                    method=f.method,
                    text_weight=f.text_weight,
                    vector_weight=f.vector_weight,
                    boost=boost.astype(np.float32) if boost is not None else None,
                    pool=pool,
                )
                chunks = [ScoredChunk(ids[s.slot], s.score, s.lexical, s.vector) for s in scored]
                rows = self._rows(c, query.agent_id, [ch.id for ch in chunks])
            finally:
                c.rollback()
        return SearchResult(chunks, notes, rows)

    @staticmethod
    def _stats(c: Any, agent_id: str, terms: Sequence[str]) -> tuple[int, int, float, dict[str, TermStats]]:
        """The agent's chunk count, total length in terms, the reference mean length of its
        postings' impacts, and the query terms it has (with their dictionary ids)."""
        rows = c.execute(
            text(
                "SELECT NULL, sum(chunks), sum(terms), NULL::int FROM memory_agent_stats WHERE agent_id = :a "
                "UNION ALL "
                "SELECT '', avgdl, NULL, NULL FROM memory_postings_ref WHERE agent_id = :a UNION ALL "
                "SELECT s.term, sum(s.df), max(s.max_tf), min(d.id) FROM memory_term_stats s "
                "JOIN memory_terms d ON d.agent_id = :a AND d.term = s.term "
                "WHERE s.agent_id = :a AND s.term = ANY(:t) GROUP BY s.term"
            ),
            {"a": agent_id, "t": list(dict.fromkeys(terms))},
        ).all()
        chunks_n = total = 0
        ref = 1.0
        stats: dict[str, TermStats] = {}
        for term, a, b, term_id in rows:  # sums of the delta rows (goclaw_memory.pg_stats)
            if term is None:
                chunks_n, total = int(a or 0), int(b or 0)
            elif term == "":
                ref = float(a)
            elif a > 0:
                stats[term] = TermStats(int(a), int(b), int(term_id))
        return chunks_n, total, ref, stats

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
        self.facets.drop(agent_id)  # the table is the index: only the filters' facets are kept

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
        """The table is the index: folds the statistics rows the run appended
        (:func:`goclaw_memory.pg_stats.fold_changes`) and builds the HNSW indexes the run's
        :meth:`prepare_vectors` deferred, once after the load."""
        from goclaw_memory.pg_stats import fold_changes

        if not self.ensure_installed():
            fold_changes(self.engine, changes)
        self.finish_vectors()

    def ensure_installed(self) -> bool:
        """Install the statistics and postings triggers when this database lacks them (only
        this backend needs them: other backends' writes do not pay for them), counting every
        chunk; once per backend. True when it installed them (nothing left to fold). A
        read-only server (a replica) cannot install them: a StoreError says where to."""
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
                    "memory backend 'postgresql' needs its statistics triggers, which this read-only "
                    "database (a replica?) lacks: run `goclaw memory doctor --repair` with backend = "
                    '"postgresql" against the primary once'
                )
            # One installer at a time across processes; the others find them installed.
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": 0x60C1A5})
            done = bool(missing_triggers(conn))
            if done:
                install(conn.exec_driver_sql)
        self._installed = True
        return done

    def compact_stats(self, agent_id: str, terms: set[str] | None = None) -> None:
        """Fold the agent's statistics rows (only those of ``terms`` when given)."""
        from goclaw_memory.pg_stats import fold

        fold(self.engine, agent_id, terms)

    # ------------------------------------------------------------------ vectors
    def _supports_iterative(self, conn: Any) -> bool:
        if self._iterative is None:
            row = conn.execute(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).first()
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
                found = conn.execute(text("SELECT to_regclass(:n)"), {"n": _hnsw_name(dim)}).scalar()
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

    def _vector(
        self,
        conn: Any,
        query: SearchQuery,
        users: list[str],
        limit: int,
        *,
        exact: bool = False,
        only: list[int] | None = None,
    ) -> dict[int, tuple[str, str, float | None]]:
        """The nearest ``limit`` chunks: ``{id: (user, lex, cosine)}``. By HNSW, or with
        ``exact`` by computing every cosine of the scope (its rows through the scope index;
        the ordering expression differs from the HNSW index's, so that index is not used)."""
        assert query.space is not None
        agent_id, query_vector = query.agent_id, query.vector
        provider, model, dim = query.space
        dim = int(dim)
        q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        if not np.any(q):
            return {}
        # Same expression and (literal) predicate as the partial HNSW index, so it is usable.
        expr = f"(embedding::vector({dim})) <=> CAST(:q AS vector({dim}))"
        sql = (
            f"SELECT id, user_id, lex, 1 - ({expr}) AS s FROM memory_chunks "
            f"WHERE embedding_dim = {dim} AND agent_id = :a AND user_id = ANY(:users) "
            f"AND embedding_provider = :p AND embedding_model = :m{'' if only is None else _ONLY} "
            f"ORDER BY {f'({expr}) + 0' if exact else expr} LIMIT :k"
        )
        # HNSW explores `ef` candidates: it must exceed the LIMIT (else at most 40 rows come
        # back), and more finds more of the exact nearest neighbours (benchmarks/README.md).
        configured = int(getattr(self.engine.plugin_settings("memory"), "hnsw_ef_search", 0) or 0)
        ef = max(int(limit), configured) if configured else max(40, int(limit) * 4)
        params: dict[str, Any] = {
            "a": agent_id,
            "users": list(users),
            "p": provider,
            "m": model,
            "k": int(limit),
        }
        if only is not None:
            params["only"] = only

        def _query(c: Any) -> Any:
            # Local settings last until the end of the (read-only) transaction this search
            # runs in; one round trip for both.
            settings = f"set_config('hnsw.ef_search', '{min(ef, 1000)}', true)"
            if exact:
                return c.execute(text(sql), params | {"q": q}).all()
            if self._supports_iterative(c):
                settings += ", set_config('hnsw.iterative_scan', 'relaxed_order', true)"
            c.exec_driver_sql(f"SELECT {settings}")
            params["q"] = q  # sent in binary by the store's connections
            return c.execute(text(sql), params).all()

        return {int(i): (u, lex or "", float(sim)) for i, u, lex, sim in _query(conn)}


# Queries whose lists hold more rows than this in all read the longest lists only down to one
# of CUT_IMPACTS (all above a one-time term in a chunk of average length: 1 / (1 + k1) = 0.45,
# where most rows are), while what the rows left can add stays within CUT_SHARE of the budget.
# The first, 1.0, is above every impact: the list is not read at all (MaxScore's
# non-essential lists): a chunk only in such lists cannot reach the result, and the chunks read
# get their exact BM25 from their own terms anyway.
CUT_ABOVE = 20_000
# The budget comes from the chunks of the rarest terms whose lists hold this many rows in all.
RARE_ROWS = 10000
CUT_IMPACTS = (1.0, 0.8, 0.7, 0.6, 0.5)
CUT_SHARE = 0.2


class Ranked:
    """The chunks of highest BM25 bound (:func:`goclaw_memory.pg_postings.top_sql`), read in
    growing steps: the first ``first``, then four times more each time, from the bounds already
    returned (the bounds of 8 steps at once, so most searches aggregate the postings once)."""

    def __init__(
        self,
        c: Any,
        query: SearchQuery,
        users: list[str],
        weights: dict[str, float],
        ids_of: dict[str, int],
        rho: float,
        cosine: bool,
        only: list[int] | None,
        *,
        first: int,
    ) -> None:
        self.c, self.query, self.users, self.cosine, self.only = c, query, users, cosine, only
        self.weights, self.ids_of, self.rho = weights, ids_of, rho
        self.step = first
        self.done = 0  # bounds read
        self.bounds: list[tuple[int, float]] = []  # (id, bound), best first
        self.complete = False  # every matching chunk is in bounds
        self.cuts: dict[str, float] = {}  # term -> the impact its list is read down to
        self.tcut = 0.0  # the most the cut lists' unread rows add to a chunk
        self.aggregated = False  # the bounds were computed (with the cuts of that time)

    def cut(self, room: float, df: dict[str, int]) -> None:
        """Read the longest lists only down to one of :data:`CUT_IMPACTS` (the highest that
        fits) while what their unread rows can add stays within :data:`CUT_SHARE` of ``room``
        (the BM25 a chunk not read must stay below)."""
        for t in sorted(self.weights, key=lambda t: (-df[t], t)):
            for impact in CUT_IMPACTS:
                tau = self.tail(t, impact)
                if self.tcut + tau < CUT_SHARE * room:
                    self.cuts[t] = impact
                    self.tcut += tau
                    break

    def tail(self, term: str, impact: float) -> float:
        """The most the rows of ``term`` below ``impact`` add to a chunk's BM25."""
        return self.weights[term] * factor_bound(impact, self.rho)

    def read(self, found: dict[int, tuple[str, str, float | None]]) -> float:
        """Read the next step into ``found`` (the chunks of the scope not there yet, with their
        user, terms and, in a hybrid search, cosine); returns the most any chunk not read can
        have as BM25 (0 when every match was read)."""
        want = self.done + self.step
        read_cut = self.tcut and self.aggregated  # bounds of the cut lists were read
        if read_cut and (self.done >= len(self.bounds) or self.bounds[self.done][1] <= self.tcut):
            # The cut lists' unread rows are what is left: read them all from here on.
            self.cuts, self.tcut, self.bounds, self.done, self.complete = {}, 0.0, [], 0, False
            self.aggregated = False
            want = self.step
        params: dict[str, Any] = {"a": self.query.agent_id, "users": self.users, "seen": list(found)}
        parts = _candidate_sql(self.query, self.cosine, self.only, params)
        if want > len(self.bounds) and not self.complete:
            limit = want * 8
            params.update(tcut=self.tcut, rho=self.rho, lim=limit, top=want)
            if len(self.weights) == 1:
                params.update(t=[self.ids_of[t] for t in self.weights], w=list(self.weights.values()))
                sql = TOP_ONE.format(**parts)
            else:  # the lists read, each with its cut (a list cut at 1.0 has no row to read)
                read = [t for t in self.weights if self.cuts.get(t, 0.0) < 1.0]
                for i, t in enumerate(read):
                    cut = self.cuts.get(t, 0.0)
                    tau = self.tail(t, cut) if t in self.cuts else 0.0
                    params.update(
                        {f"t{i}": self.ids_of[t], f"w{i}": self.weights[t], f"c{i}": cut, f"tau{i}": tau}
                    )
                sql = top_sql(len(read), self.rho >= 1.0).format(**parts)
            self.bounds = []
            for n, i, ub, user, lex, cos in self.c.execute(text(sql), params).all():
                if n:
                    self.bounds.append((int(i), float(ub)))
                else:
                    found[int(i)] = (user, lex or "", cos)
            self.complete = len(self.bounds) < limit
            self.aggregated = True
        else:
            params["ids"] = [i for i, _ub in self.bounds[self.done : want]]
            for i, user, lex, cos in self.c.execute(text(FETCH.format(**parts)), params).all():
                found.setdefault(int(i), (user, lex or "", cos))
        self.done = min(want, len(self.bounds))
        self.step *= 4
        if self.done < len(self.bounds):
            return max(self.bounds[self.done][1], self.tcut)
        return self.tcut if self.complete else max(self.bounds[-1][1], self.tcut)


def _candidate_sql(
    query: SearchQuery, cosine: bool, only: list[int] | None, params: dict[str, Any]
) -> dict[str, str]:
    """The parts of a candidate read (chunks ``c``): its cosine to the query in a hybrid search
    (else NULL) and a filtered search's condition; their parameters go into ``params``."""
    cos = "NULL"
    if cosine and query.space is not None:
        provider, model, dim = query.space
        params.update(qv=np.asarray(query.vector, dtype=np.float32).reshape(-1), p=provider, m=model)
        cos = (
            f"CASE WHEN c.embedding_dim = {int(dim)} AND c.embedding_provider = :p "
            f"AND c.embedding_model = :m THEN 1 - ((c.embedding::vector({int(dim)})) "
            f"<=> CAST(:qv AS vector({int(dim)}))) END"
        )
    if only is not None:
        params["only"] = only
    return {"cos": cos, "only": "" if only is None else " AND c.id = ANY(:only)"}


def _terms_of(lex: str | None) -> list[str] | None:
    return lex.split() if lex is not None else None


def _hnsw_name(dim: int) -> str:
    return f"ix_memory_chunks_hnsw_{int(dim)}"


def make_postgres_backend(engine: Host) -> PostgresSearchBackend:
    if engine.db.backend != "postgresql":
        from goclaw.errors import ConfigError

        raise ConfigError("memory backend 'postgresql' needs a PostgreSQL database_url")
    return PostgresSearchBackend(engine)
