"""The PostgreSQL search backend: ``tsvector`` + GIN over the retrieval engine's terms and
pgvector HNSW.

The ``tsv`` column is generated from ``memory_chunks.lex`` (the terms of
:mod:`goclaw_search.tokenize`: stemmed words, whole codes and their parts, CJK bigrams),
so full text matches exactly as on SQLite. A hybrid search:

1. vector candidates: the nearest ``pool`` chunks by HNSW (cosine), scope filtered in SQL;
2. full-text candidates: the chunks matching the query's *selective* terms (those whose
   matches together stay within :data:`PG_RANK_BUDGET`, rarest first; the "common terms" rule
   of Lucene), pre-ranked in SQL by IDF-weighted ``ts_rank``; the best ``pool`` are kept;
3. every candidate of either channel gets **both** real scores: BM25 (k1 1.2, b 0.75) from its
   stored terms with document frequencies from the planner's statistics, and its cosine;
4. :func:`goclaw_search.fusion.fuse` over the candidates.
"""

from __future__ import annotations

import logging
import re
import threading
import time
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
from goclaw_memory.filters import allowed_ids, read_facet_rows
from goclaw_memory.pg_text import (  # re-exported: imported from here before the split
    K1,
    B,
    _PgStats,
    bm25_from_lex,
    read_pg_stats,
    split_terms,
    tsquery_literal,
)
from goclaw_search.fusion import fuse

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

log = logging.getLogger(__name__)

__all__ = [
    "K1",
    "PG_RANK_BUDGET",
    "B",
    "PostgresSearchBackend",
    "bm25_from_lex",
    "make_postgres_backend",
    "split_terms",
    "tsquery_literal",
]

# At most this many full-text matches are enumerated per query (sum of the kept terms'
# estimated document frequencies); PostgreSQL visits each match's heap row (~1-5 µs).
PG_RANK_BUDGET = 1_000
_ONLY = " AND id = ANY(:only)"  # a filtered search's matching chunks (goclaw_memory.filters)


class PostgresSearchBackend(SearchBackend):
    """tsvector + GIN and pgvector HNSW."""

    name = "postgresql"
    filters = True  # query.filter narrows both candidate queries in SQL (goclaw_memory.filters)

    def __init__(self, engine: Host) -> None:
        self.engine = engine
        self._prepared: set[int] = set()
        self._deferred: set[int] = set()
        self._bulk = 0  # open bulk_load() blocks
        self._lock = threading.Lock()
        self._iterative: bool | None = None
        self._stats: tuple[float, _PgStats] = (float("-inf"), _PgStats({}, 0.0, 0.0))

    # ------------------------------------------------------------------ statistics
    def _doc_freq(self, conn: Any) -> _PgStats:
        """Rows per common lexeme from the planner's statistics (refreshed each minute)."""
        fetched, stats = self._stats
        if time.monotonic() - fetched < 60:
            return stats
        stats = _PgStats({}, 0.0, 0.0)
        try:
            stats = read_pg_stats(conn)
        except Exception:
            log.debug("pg_stats lookup failed", exc_info=True)
            conn.rollback()
        self._stats = (time.monotonic(), stats)
        return stats

    # ------------------------------------------------------------------ search
    def search(self, query: SearchQuery) -> SearchResult:
        """Three round trips on one connection: vector candidates (with their terms), full-text
        candidates (with their cosine), and the rows of the winners."""
        cfg = self.engine.plugin_settings("memory")
        pool = max(int(cfg.min_candidates), int(cfg.candidate_factor) * query.limit)
        notes: list[str] = []
        users = list(query.users)
        want_lex = query.channel in ("hybrid", "lexical") and bool(query.terms)
        want_vec = (
            query.channel in ("hybrid", "vector") and query.vector is not None and query.space is not None
        )
        found: dict[int, tuple[str, str, float | None]] = {}  # id -> (user, lex, cosine)
        only = None  # the ids query.filter lets through: a condition of both candidate queries
        if query.filter is not None:
            only = allowed_ids(read_facet_rows(self.engine, query.agent_id), query.filter, users).tolist()
        with self.engine.db.engine.connect() as c, c.begin():
            stats = self._doc_freq(c) if want_lex else _PgStats({}, 0.0, 0.0)
            if want_vec:
                found.update(self._vector(c, query, users, pool, only))
                if not found:
                    note = self._no_vectors(c, query, users)
                    if note:
                        notes.append(note)
            if want_lex:
                lexical_hits = self._lexical(c, query, users, stats, pool, with_cosine=bool(found), only=only)
                for i, row in lexical_hits.items():
                    found.setdefault(i, row)
            ids = list(found)
            lexical = np.zeros(len(ids), dtype=np.float32)
            if want_lex and ids:
                n = max(stats.rows, float(len(ids)), 1.0)
                idf = {t: stats.idf(t, n) for t in query.terms}
                avgdl = stats.avgdl or float(np.mean([r[1].count(" ") + 1 for r in found.values()]))
                lexical = np.array(
                    [bm25_from_lex(found[i][1], query.terms, idf, avgdl) for i in ids], dtype=np.float32
                )
            vector = None
            if want_vec and any(r[2] is not None for r in found.values()):
                vector = np.array([max(0.0, found[i][2] or 0.0) for i in ids], dtype=np.float32)
            if not ids:
                return SearchResult([], notes)
            boost = None
            f = query.fusion
            if len(users) > 1 and f.user_boost != 1.0:
                boost = np.array([f.user_boost if found[i][0] else 1.0 for i in ids], dtype=np.float32)
            scored = fuse(
                lexical if want_lex else None,
                vector,
                None,
                limit=query.wanted,
                method=f.method,
                text_weight=f.text_weight,
                vector_weight=f.vector_weight,
                boost=boost,
                pool=pool,
            )
            chunks = [ScoredChunk(ids[s.slot], s.score, s.lexical, s.vector) for s in scored]
            rows = self._rows(c, query.agent_id, [ch.id for ch in chunks])
        return SearchResult(chunks, notes, rows)

    def _lexical(
        self,
        c: Any,
        query: SearchQuery,
        users: list[str],
        stats: _PgStats,
        pool: int,
        *,
        with_cosine: bool,
        only: list[int] | None = None,
    ) -> dict[int, tuple[str, str, float | None]]:
        """Full-text matches of the selective terms, the best ``max(4 × pool, 200)`` by the
        IDF sum of the query terms they match (ties: shorter chunks first, as BM25 would), each
        with its user, its terms (for BM25) and, in a hybrid search, its cosine to the query:
        ``{id: (user, lex, cosine)}``."""
        terms = list(query.terms)
        selective, _common = split_terms(terms, stats.df, PG_RANK_BUDGET, keep_rarest=True)
        n = max(stats.rows, 1.0)
        ranks = []
        params: dict[str, Any] = {"a": query.agent_id, "users": users, "k": max(4 * pool, 200), "only": only}
        for j, t in enumerate(terms[:8]):
            params[f"t{j}"] = tsquery_literal([t])
            params[f"w{j}"] = stats.idf(t, n)
            # IDF-weighted "does it match": much cheaper per row than ts_rank, and BM25 re-ranks
            # the kept rows anyway (tf and length only refine among them).
            ranks.append(f"CASE WHEN tsv @@ CAST(:t{j} AS tsquery) THEN :w{j} ELSE 0 END")
        cosine = "NULL"
        if with_cosine and query.space is not None:
            provider, model, dim = query.space
            params.update(qv=np.asarray(query.vector, dtype=np.float32).reshape(-1), p=provider, m=model)
            cosine = (
                f"CASE WHEN embedding_dim = {int(dim)} AND embedding_provider = :p AND embedding_model = :m "
                f"THEN 1 - ((embedding::vector({int(dim)})) <=> CAST(:qv AS vector({int(dim)}))) END"
            )
        sql = (
            f"SELECT id, user_id, lex, {cosine} FROM memory_chunks WHERE agent_id = :a "
            f"AND user_id = ANY(:users){_ONLY if only is not None else ''} AND tsv @@ CAST(:q AS tsquery) "
            f"ORDER BY {' + '.join(ranks)} DESC, length(lex) LIMIT :k"
        )
        params["q"] = tsquery_literal(selective)
        found = {int(r[0]): (r[1], r[2] or "", r[3]) for r in c.execute(text(sql), params).all()}
        if len(found) < pool and len(selective) < len(terms) and query.vector is None:
            # Full text alone and too few matches of the selective terms: the common terms'
            # best matches fill up (in a hybrid search they score the vector candidates instead).
            params["q"] = tsquery_literal(terms)
            for r in c.execute(text(sql), params).all():
                found.setdefault(int(r[0]), (r[1], r[2] or "", r[3]))
        return found

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
        return None  # the table is the index: nothing derived is kept

    def apply_changes(self, changes: IndexChanges) -> None:
        """The table is the index; builds the HNSW indexes the run's :meth:`prepare_vectors`
        deferred, once after the load."""
        self.finish_vectors()

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
        self, conn: Any, query: SearchQuery, users: list[str], limit: int, only: list[int] | None = None
    ) -> dict[int, tuple[str, str, float | None]]:
        """The nearest ``limit`` chunks by HNSW: ``{id: (user, lex, cosine)}``."""
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
            f"WHERE embedding_dim = {dim} AND agent_id = :a AND user_id = ANY(:users)"
            f"{_ONLY if only is not None else ''} "
            "AND embedding_provider = :p AND embedding_model = :m "
            f"ORDER BY {expr} LIMIT :k"
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
            "only": only,
        }

        def _query(c: Any) -> Any:
            # Local settings last until the end of the (read-only) transaction this search
            # runs in; one round trip for both.
            settings = f"set_config('hnsw.ef_search', '{min(ef, 1000)}', true)"
            if self._supports_iterative(c):
                settings += ", set_config('hnsw.iterative_scan', 'relaxed_order', true)"
            c.exec_driver_sql(f"SELECT {settings}")
            params["q"] = q  # sent in binary by the store's connections
            return c.execute(text(sql), params).all()

        return {int(i): (u, lex or "", float(sim)) for i, u, lex, sim in _query(conn)}


def _terms_of(lex: str | None) -> list[str] | None:
    return lex.split() if lex is not None else None


def _hnsw_name(dim: int) -> str:
    return f"ix_memory_chunks_hnsw_{int(dim)}"


def make_postgres_backend(engine: Host) -> PostgresSearchBackend:
    if engine.db.backend != "postgresql":
        from goclaw.errors import ConfigError

        raise ConfigError("memory backend 'postgresql' needs a PostgreSQL database_url")
    return PostgresSearchBackend(engine)
