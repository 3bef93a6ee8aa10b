"""Prototype, measured: packed BM25 postings on PostgreSQL, scored in the client.

The ``postgresql`` memory backend keeps one row per (term, chunk) in ``memory_postings`` and
aggregates the query terms' rows in SQL (~1 µs a row: common words aggregate 20,000-110,000
rows). This prototype tries a different layout beside it, in the same schema, without touching
the backend:

* ``packed_postings``: one row per (agent, term): ``ords`` the chunks' ordinals as big-endian
  int32, ``tfs`` the term's frequency in each (uint8, or uint16 in a row whose largest is 256
  or more: the row's byte count says which), both ``bytea`` stored uncompressed
  (``SET STORAGE EXTERNAL``): reading a list is a copy of its bytes;
* ``packed_docs``: one row per agent: its chunk count, total length in terms, and each chunk's
  length by ordinal (uint8, or uint16 when one is 256 or more): BM25 needs the length of
  every matching chunk, so the lengths are packed per agent and fetched with the lists;
* ``packed_ords``: (agent, ordinal) -> chunk id, to read the winners' rows (a real design
  would keep the ordinal in the chunk's row).

All three built from ``memory_postings`` (the term frequency recovered from the stored impact,
the chunk's length and the agent's reference length) by :func:`build`, timed. A search
(:func:`make_packed_backend`) fetches the query terms' lists and the agent's packed lengths in
one round trip (binary protocol) and computes the exact BM25 of every chunk holding a query
term with numpy (:class:`Lexical`: N and avgdl from the packed lengths, df a list's length).
Full text: the best ``max(pool, wanted)``, fused as the backend fuses. Hybrid: the nearest
chunks by vector (the backend's HNSW query) and the cosine of the best by BM25 in one
statement, more of the latter until no chunk left out can enter the fused top (the backend's
own bound, :func:`goclaw_memory.pg_exact.budget`). Then the winners' rows; all in one
read-only snapshot.

Measured, interleaved question by question (order rotated), full text and hybrid: p50 / p90 /
p99 of (a) the ``postgresql`` backend, (b) the packed prototype, (c) the SQLite engine, all
through ``memory.search`` and each backend's own part; the top-10 overlap of each with (c) and
of (b) with (a); the BM25 of (b)'s winners against the one computed from their stored terms
with the trigger-kept statistics; bytes per posting on disk; the build time; the cost of one
chunk write that appends to its terms' packed rows (``UPDATE ... ||``, rolled back) against
one insert through the current triggers. Then (``--delta N``, default 1,000) the packed rows
built without the agent's last N chunks, which form a delta (one row per (term, chunk) and
one per chunk) read in the same round trip: searched, compacted into the packed rows (timed,
with its WAL), searched again.

    GOCLAW_BENCH_DATABASE_URL=postgresql+psycopg://goclaw:goclaw@127.0.0.1:5432/goclaw_test \\
      nice -n 10 .venv/bin/python benchmarks/pg_packed_postings.py --keep DIR [--chunks 100000]

``DIR`` holds the corpus and the SQLite workspace, ``DIR/schema`` the PostgreSQL schema's name
(the corpus of ``pg_fidelity.py --interleaved DIR`` is the same and is reused; a new ``DIR``
is loaded, ~3-4 minutes at 100k chunks). The packed tables are rebuilt on every run
(``--searches-only``: those of the run before, searched again). What-ifs: ``--no-pre-ping``,
the PostgreSQL pool without its liveness round trip; ``--lean``, (b) reads the rows of the
winners a search without a reranker shows, not of all it returns; ``--no-tiers``, no other
plugins' tiers (knowledge graph, episodic) on any of the three. ``--drop`` drops the schema and ``DIR``. The
prototype covers one agent's agent-level chunks (no user scopes, no filters).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

K = 10
CHANNELS = ("lexical", "hybrid")

DDL = (
    "DROP TABLE IF EXISTS packed_postings, packed_docs, packed_ords",
    "CREATE TABLE packed_ords (agent_id text NOT NULL, ord int NOT NULL, chunk_id bigint NOT NULL, "
    "dl int NOT NULL, PRIMARY KEY (agent_id, ord))",
    "CREATE TABLE packed_docs (agent_id text PRIMARY KEY, n int NOT NULL, total bigint NOT NULL, "
    "dl bytea NOT NULL)",
    "ALTER TABLE packed_docs ALTER COLUMN dl SET STORAGE EXTERNAL",
    "CREATE TABLE packed_postings (agent_id text NOT NULL, term text NOT NULL, ords bytea NOT NULL, "
    "tfs bytea NOT NULL, PRIMARY KEY (agent_id, term))",
    "ALTER TABLE packed_postings ALTER COLUMN ords SET STORAGE EXTERNAL",
    "ALTER TABLE packed_postings ALTER COLUMN tfs SET STORAGE EXTERNAL",
)
_DL = "cardinality(array_remove(string_to_array(coalesce(c.lex, ''), ' '), ''))"
_TF = (
    "SELECT o.agent_id, d.term, o.ord, o.chunk_id, round(p.impact::float8 * 1.2 * (1 - 0.75 + 0.75 * o.dl "
    "/ f.avgdl) / (1 - p.impact::float8))::int AS tf FROM memory_postings p JOIN memory_terms d "
    "ON d.id = p.term_id JOIN packed_ords o ON o.chunk_id = p.chunk_id JOIN memory_postings_ref f "
    "ON f.agent_id = o.agent_id WHERE true"
)
BUILD = {
    # Dense ordinals per agent (a real design would keep the ordinal in the chunk's row).
    "ordinals and lengths (packed_ords)": (
        "INSERT INTO packed_ords SELECT c.agent_id, (row_number() OVER (PARTITION BY c.agent_id "
        f"ORDER BY c.id) - 1)::int, c.id, {_DL} FROM memory_chunks c",
        "CREATE UNIQUE INDEX ix_packed_ords_chunk ON packed_ords (chunk_id)",
    ),
    "lengths packed per agent (packed_docs)": (
        "INSERT INTO packed_docs SELECT agent_id, count(*), sum(dl), CASE WHEN max(dl) < 256 THEN "
        "string_agg(substring(int2send(dl::int2) FROM 2), ''::bytea ORDER BY ord) "
        "ELSE string_agg(int2send(dl::int2), ''::bytea ORDER BY ord) END FROM packed_ords "
        "WHERE ord < %(cut)s GROUP BY agent_id",
    ),
    # tf from the impact: impact = tf / (tf + K1 (1 - B + B dl / ref)), stored as real.
    "lists packed from memory_postings (packed_postings)": (
        "INSERT INTO packed_postings SELECT x.agent_id, x.term, "
        "string_agg(int4send(x.ord), ''::bytea ORDER BY x.ord), "
        "CASE WHEN max(x.tf) < 256 THEN string_agg(substring(int2send(x.tf::int2) FROM 2), ''::bytea "
        "ORDER BY x.ord) ELSE string_agg(int2send(x.tf::int2), ''::bytea ORDER BY x.ord) END FROM ("
        f"{_TF} AND o.ord < %(cut)s) AS x GROUP BY x.agent_id, x.term",
    ),
    "ANALYZE": ("ANALYZE packed_ords, packed_docs, packed_postings",),
}

READ = (
    "SELECT NULL::text, n::bigint, total, dl, NULL::bytea FROM packed_docs WHERE agent_id = %(a)s UNION ALL "
    "SELECT term, NULL, NULL, ords, tfs FROM packed_postings WHERE agent_id = %(a)s AND term = ANY(%(t)s)"
)
# The delta: the chunks written since the last compaction, one row per (term, chunk) and one per
# chunk, by chunk id (they have no ordinal yet); a search reads them with the packed rows.
DELTA_DDL = (
    "DROP TABLE IF EXISTS packed_delta, packed_delta_docs",
    "CREATE TABLE packed_delta (agent_id text NOT NULL, term text NOT NULL, chunk_id bigint NOT NULL, "
    "tf int NOT NULL)",
    "CREATE INDEX ix_packed_delta ON packed_delta (agent_id, term)",
    "CREATE TABLE packed_delta_docs (agent_id text NOT NULL, chunk_id bigint NOT NULL, dl int NOT NULL, "
    "PRIMARY KEY (agent_id, chunk_id))",
)
# Simulated: the chunks of ordinal cut and above become the delta (the packed rows were built
# without them).
DELTA_FILL = (
    "INSERT INTO packed_delta_docs SELECT agent_id, chunk_id, dl FROM packed_ords WHERE ord >= %(cut)s",
    "INSERT INTO packed_delta SELECT x.agent_id, x.term, x.chunk_id, x.tf "
    f"FROM ({_TF} AND o.ord >= %(cut)s) AS x",
    "DELETE FROM packed_ords WHERE ord >= %(cut)s",
    "ANALYZE packed_delta, packed_delta_docs, packed_ords",
)
READ_DELTA = (
    READ + " UNION ALL SELECT '+' || term, NULL, NULL, string_agg(int8send(chunk_id), ''::bytea), "
    "string_agg(int4send(tf), ''::bytea) FROM packed_delta WHERE agent_id = %(a)s AND term = ANY(%(t)s) "
    "GROUP BY term UNION ALL SELECT '', count(*), sum(dl), string_agg(int8send(chunk_id), ''::bytea "
    "ORDER BY chunk_id), string_agg(int4send(dl), ''::bytea ORDER BY chunk_id) FROM packed_delta_docs "
    "WHERE agent_id = %(a)s"
)
# The compaction, in one transaction: the delta's chunks get the next ordinals, their lengths
# and postings are appended to the packed rows (a row of uint8 frequencies takes uint8; the
# prototype refuses a delta that would need a row widened), new terms get rows, the delta goes.
COMPACT = (
    "INSERT INTO packed_ords SELECT d.agent_id, p.n + (row_number() OVER (PARTITION BY d.agent_id "
    "ORDER BY d.chunk_id) - 1)::int, d.chunk_id, d.dl FROM packed_delta_docs d JOIN packed_docs p "
    "USING (agent_id)",
    "UPDATE packed_docs p SET n = p.n + x.c, total = p.total + x.s, dl = p.dl || x.b FROM ("
    "SELECT o.agent_id, count(*) AS c, sum(o.dl) AS s, string_agg(substring(int2send(o.dl::int2) FROM 2), "
    "''::bytea ORDER BY o.ord) AS b FROM packed_delta_docs d JOIN packed_ords o ON o.chunk_id = d.chunk_id "
    "GROUP BY o.agent_id) AS x WHERE p.agent_id = x.agent_id",
    "CREATE TEMP TABLE packed_merge ON COMMIT DROP AS SELECT d.agent_id, d.term, "
    "string_agg(int4send(o.ord), ''::bytea ORDER BY o.ord) AS o, "
    "string_agg(substring(int2send(d.tf::int2) FROM 2), ''::bytea ORDER BY o.ord) AS f1, "
    "string_agg(int2send(d.tf::int2), ''::bytea ORDER BY o.ord) AS f2, max(d.tf) AS top "
    "FROM packed_delta d JOIN packed_ords o ON o.chunk_id = d.chunk_id GROUP BY d.agent_id, d.term",
    "UPDATE packed_postings p SET ords = p.ords || x.o, tfs = p.tfs || CASE WHEN "
    "octet_length(p.tfs) * 4 = octet_length(p.ords) THEN x.f1 ELSE x.f2 END FROM packed_merge x "
    "WHERE p.agent_id = x.agent_id AND p.term = x.term",
    "INSERT INTO packed_postings SELECT x.agent_id, x.term, x.o, "
    "CASE WHEN x.top < 256 THEN x.f1 ELSE x.f2 END FROM packed_merge x WHERE NOT EXISTS "
    "(SELECT 1 FROM packed_postings p WHERE p.agent_id = x.agent_id AND p.term = x.term)",
    "DELETE FROM packed_delta",
    "DELETE FROM packed_delta_docs",
)
# With ``lean``: every winner's chunk id, the row only of those a search without a reranker
# shows (no stored terms); the memory service reads the others if de-duplication needs them.
ROWS_LEAN = (
    "SELECT o.ord, o.chunk_id, c.user_id, c.path, c.start_line, c.end_line, c.text, NULL FROM packed_ords o "
    "LEFT JOIN memory_chunks c ON c.id = o.chunk_id AND o.ord = ANY(%(s)s) AND c.user_id = ANY(%(u)s) "
    "WHERE o.agent_id = %(a)s AND o.ord = ANY(%(o)s)"
)
ROWS_DELTA = (
    "SELECT -1, c.id, c.user_id, c.path, c.start_line, c.end_line, c.text, c.lex FROM memory_chunks c "
    "WHERE c.agent_id = %(a)s AND c.id = ANY(%(i)s) AND c.user_id = ANY(%(u)s)"
)
ROWS = (
    "SELECT o.ord, c.id, c.user_id, c.path, c.start_line, c.end_line, c.text, c.lex FROM packed_ords o "
    "JOIN memory_chunks c ON c.id = o.chunk_id WHERE o.agent_id = %(a)s AND o.ord = ANY(%(o)s) "
    "AND c.user_id = ANY(%(u)s)"
)


_WIDTH = {1: "u1", 2: ">u2"}  # a row's bytes per value: uint8 when its largest is below 256


def _best(scores: np.ndarray, lists: list[np.ndarray], m: int) -> np.ndarray:
    """The ordinals of the ``m`` best positive ``scores`` (all of them when fewer), in any
    order. The ``m``-th best score among the shortest lists' chunks is at most the ``m``-th
    best of all: only chunks at or above it are partitioned, not the whole agent."""
    acc, held = [], 0
    for o in sorted(lists, key=len):
        acc.append(o)
        held += len(o)
        if held >= 4 * m:
            break
    sub = np.unique(np.concatenate(acc)) if len(acc) > 1 else acc[0] if acc else np.zeros(0, np.intp)
    if len(sub) >= m:
        cand = np.flatnonzero(scores >= np.partition(scores[sub], len(sub) - m)[len(sub) - m])
    else:
        cand = np.flatnonzero(scores > 0)
    if len(cand) <= m:
        return cand
    return cand[np.argpartition(scores[cand], len(cand) - m)[len(cand) - m :]]


class Lexical:
    """The exact BM25 of every chunk of the agent that holds a query term, from the fetched
    packed rows (and delta): ``scores`` by ordinal (the delta's chunks after the packed ones,
    ``new_ids`` their chunk ids in order), ``lists`` each term's ordinals."""

    def __init__(self, got: list[Any], counts: dict[str, int]) -> None:
        from goclaw_memory.pg_exact import idf
        from goclaw_memory.pg_text import K1, B

        self.n = self.packed_n = self.nbytes = self.postings = 0
        self.new_ids = np.zeros(0, np.int64)
        self.scores = np.zeros(0)
        self.lists: list[np.ndarray] = []
        docs = next((r for r in got if r[0] is None), None)
        if docs is None:
            return
        n, total = int(docs[1]), int(docs[2])
        dl = np.frombuffer(docs[3], _WIDTH[len(docs[3]) // max(n, 1)])
        self.nbytes = len(docs[3])
        extra = next((r for r in got if r[0] == "" and r[1]), None)
        if extra is not None:
            self.new_ids = np.frombuffer(extra[3], ">i8")
            dl = np.concatenate([dl, np.frombuffer(extra[4], ">i4")])
            total += int(extra[2])
            self.nbytes += len(extra[3]) + len(extra[4])
        self.packed_n, n = n, n + len(self.new_ids)
        self.n = n
        delta: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for term, _, _, ids, tfs in got:
            if term and term[0] == "+":
                pos = np.searchsorted(self.new_ids, np.frombuffer(ids, ">i8"))
                delta[term[1:]] = (self.packed_n + pos, np.frombuffer(tfs, ">i4"))
                self.nbytes += len(ids) + len(tfs)
        avgdl = total / n if n else 1.0
        self.scores = np.zeros(n)
        for term in counts:
            parts = [delta[term]] if term in delta else []
            row = next((r for r in got if r[0] == term), None)
            if row is not None:
                o = np.frombuffer(row[3], ">i4")
                parts.insert(0, (o, np.frombuffer(row[4], _WIDTH[len(row[4]) // len(o)])))
                self.nbytes += len(row[3]) + len(row[4])
            if not parts:
                continue
            o = np.concatenate([p[0] for p in parts]).astype(np.intp)
            tf = np.concatenate([p[1] for p in parts]).astype(np.float64)
            w = counts[term] * idf(len(o), float(n)) * (K1 + 1)
            self.scores[o] += w * tf / (tf + K1 * (1 - B + B * dl[o] / avgdl))
            self.postings += len(o)
            self.lists.append(o)

    def ord_of(self, chunk_id: int, ord_: int | None) -> int:
        """A chunk's ordinal here: its packed one, or its place after them in the delta."""
        return int(ord_) if ord_ is not None else self.packed_n + int(np.searchsorted(self.new_ids, chunk_id))


def make_packed_backend(engine: Any, delta: bool = False) -> Any:
    """A ``postgresql`` backend whose full-text and hybrid searches read the packed lists
    instead (the rest, e.g. filtered searches, as the backend does)."""
    from goclaw.contracts.search import ChunkRow, ScoredChunk, SearchResult
    from goclaw_memory.pg_backend import PostgresSearchBackend
    from goclaw_memory.pg_exact import EXACT_VECTOR_SCAN, budget
    from goclaw_memory.search_rows import shown
    from goclaw_search.fusion import fuse

    class PackedBackend(PostgresSearchBackend):
        name = "postgresql-packed"

        def __init__(self, engine: Any, delta: bool) -> None:
            super().__init__(engine)
            self.delta = delta  # read the delta tables too
            self.lean = False  # what-if: rows only of the winners shown (ROWS_LEAN)
            # Per search: fetch, numpy, vector round trips, rows (s); bytes fetched, postings.
            self.timing: list[tuple[float, float, float, float, int, int]] = []
            self.last: dict[int, float] = {}  # winner chunk id -> its BM25
            self._vec = 0.0
            self.trips: list[int] = []  # per hybrid search: its vector statements

        def search(self, query: Any) -> Any:
            hybrid = query.channel == "hybrid" and query.vector is not None and query.space is not None
            if query.filter is not None or not query.terms or not (hybrid or query.channel == "lexical"):
                return super().search(query)
            cfg = self.engine.plugin_settings("memory")
            pool = max(int(cfg.min_candidates), int(cfg.candidate_factor) * query.limit)
            counts: dict[str, int] = {}
            for t in query.terms:
                counts[t] = counts.get(t, 0) + 1
            if hybrid and self._iterative is None:  # before the search's transaction: it reads
                with self.engine.db.engine.connect() as c:
                    self._supports_iterative(c)
            with self.engine.db.engine.connect() as c:
                begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
                if hybrid:  # the backend's HNSW settings (unused by an exact scan), same round trip
                    ef = int(getattr(cfg, "hnsw_ef_search", 0) or 0)
                    ef = max(pool, ef) if ef else max(40, pool * 4)
                    begin += f"; SELECT set_config('hnsw.ef_search', '{min(ef, 1000)}', true)"
                    if self._supports_iterative(c):
                        begin += ", set_config('hnsw.iterative_scan', 'relaxed_order', true)"
                c.exec_driver_sql(begin)
                try:
                    raw = c.connection.driver_connection
                    t0 = time.perf_counter()
                    with raw.cursor(binary=True) as cur:
                        cur.execute(
                            READ_DELTA if self.delta else READ, {"a": query.agent_id, "t": list(counts)}
                        )
                        got = cur.fetchall()
                    t1 = time.perf_counter()
                    lex = Lexical(got, counts)
                    users = list(query.users)
                    self._vec = 0.0
                    cos = None
                    if not lex.n:
                        ords = np.zeros(0, np.intp)
                    elif hybrid:
                        found = self._hybrid(raw, query, lex, pool, users)
                        ords = np.array(sorted(found), dtype=np.intp)
                        cos = np.array([max(0.0, found[o][1]) for o in ords])
                    else:
                        ords = _best(lex.scores, lex.lists, max(pool, query.wanted))
                        ords = ords[np.lexsort((ords, -lex.scores[ords]))]  # best first, ties by ordinal
                    if not len(ords):
                        return SearchResult([], [])
                    f = query.fusion
                    scored = fuse(
                        lex.scores[ords].astype(np.float32),
                        cos.astype(np.float32) if cos is not None else None,
                        None,
                        limit=query.wanted,
                        method=f.method,
                        text_weight=f.text_weight,
                        vector_weight=f.vector_weight,
                        pool=pool,
                    )
                    t2 = time.perf_counter()
                    win = [int(ords[s.slot]) for s in scored]
                    show = None
                    if self.lean and not query.rerank_terms:
                        show = shown(win, [s.score for s in scored], query.limit, len(set(users)) == 1)
                    rows_of = self._read_rows(raw, query.agent_id, win, lex, users, show)
                    t3 = time.perf_counter()
                finally:
                    c.rollback()
            if len(rows_of) < len(win):
                raise RuntimeError("a winner is outside the search's users: the prototype covers one user")
            chunks, rows = [], {}
            self.last = {}
            for s in scored:
                o = int(ords[s.slot])
                r = rows_of[o]
                cid = int(r[1])
                chunks.append(ScoredChunk(cid, s.score, s.lexical, s.vector))
                if r[3] is None:  # not read (lean): the service reads it if it needs it
                    continue
                terms = r[7].split() if r[7] is not None else None
                rows[cid] = ChunkRow(cid, r[2], r[3], int(r[4]), int(r[5]), r[6], terms)
                self.last[cid] = float(lex.scores[o])
            self.timing.append((t1 - t0, t2 - t1 - self._vec, self._vec, t3 - t2, lex.nbytes, lex.postings))
            return SearchResult(chunks, [], rows)

        def _hybrid(
            self, raw: Any, query: Any, lex: Lexical, pool: int, users: list[str]
        ) -> dict[int, tuple[int, float]]:
            """The chunks whose fused score can reach the top: ``{ordinal: (chunk id, cosine)}``.
            Every chunk's BM25 is known: the nearest ``max(pool, wanted)`` by vector (HNSW, or
            an exact scan for small agents) and the best by BM25, more of the latter until no
            chunk left out can enter the fused top (:func:`goclaw_memory.pg_exact.budget`:
            its BM25 is at most the best left out, its cosine at most the nearest's lowest)."""
            provider, model, dim = query.space
            dim = int(dim)
            q = "[" + ",".join(repr(float(x)) for x in np.asarray(query.vector, np.float32).reshape(-1)) + "]"
            expr = f"(c.embedding::vector({dim})) <=> CAST(%(q)s AS vector({dim}))"
            match = f"c.embedding_dim = {dim} AND c.embedding_provider = %(p)s AND c.embedding_model = %(m)s"
            cosine = f"CASE WHEN {match} THEN 1 - ({expr}) END"
            want = max(pool, query.wanted)
            exact = lex.n <= EXACT_VECTOR_SCAN
            nearest = (
                f"SELECT 'v', v.id, v.s, o.ord FROM (SELECT c.id, 1 - ({expr}) AS s FROM memory_chunks c "
                f"WHERE {match} AND c.agent_id = %(a)s AND c.user_id = ANY(%(u)s) "
                f"ORDER BY {f'({expr}) + 0' if exact else expr} LIMIT %(k)s) AS v "
                "LEFT JOIN packed_ords o ON o.chunk_id = v.id"
            )
            by_ord = (
                f"SELECT 'c', c.id, {cosine}, o.ord FROM packed_ords o "
                "JOIN memory_chunks c ON c.id = o.chunk_id WHERE o.agent_id = %(a)s AND o.ord = ANY(%(o)s) "
                "AND c.user_id = ANY(%(u)s)"
            )
            by_id = (
                f"SELECT 'c', c.id, {cosine}, NULL::int FROM memory_chunks c WHERE c.agent_id = %(a)s "
                "AND c.id = ANY(%(i)s) AND c.user_id = ANY(%(u)s)"
            )
            params = {"q": q, "p": provider, "m": model, "a": query.agent_id, "u": users, "k": want}
            f = query.fusion
            found: dict[int, tuple[int, float]] = {}
            rest_cosine = 0.0
            m = 4 * want  # the cosines of more of the best by BM25 at once: mostly one statement
            first = True
            self.trips.append(0)
            while True:
                self.trips[-1] += 1
                top = _best(lex.scores, lex.lists, m).tolist()
                new = [o for o in top if o not in found]
                params["o"] = [o for o in new if o < lex.packed_n]
                params["i"] = [int(lex.new_ids[o - lex.packed_n]) for o in new if o >= lex.packed_n]
                sql = " UNION ALL ".join(
                    ([nearest] if first else []) + [by_ord] + ([by_id] if params["i"] else [])
                )
                t = time.perf_counter()
                with raw.cursor() as cur:
                    cur.execute(sql, params)
                    got = cur.fetchall()
                self._vec += time.perf_counter() - t
                near = [float(r[2]) for r in got if r[0] == "v"]
                if first and len(near) >= want:  # else every vector of the scope was read
                    rest_cosine = min(near)
                first = False
                for _, cid, cos, o in got:
                    found[lex.ord_of(int(cid), o)] = (int(cid), float(cos or 0.0))
                cand = np.array(sorted(found), dtype=np.intp)
                left = lex.scores.copy()
                left[cand] = 0.0
                rest_bm25 = float(left.max()) if len(left) else 0.0
                room = budget(
                    lex.scores[cand],
                    np.array([max(0.0, found[o][1]) for o in cand]),
                    rest_cosine=rest_cosine,
                    k=query.wanted,
                    method=f.method,
                    text_weight=f.text_weight,
                    vector_weight=f.vector_weight,
                    boost=None,
                    pool=pool,
                )
                if rest_bm25 <= 0 or rest_bm25 < room or m >= lex.n:
                    return found
                m *= 4

        @staticmethod
        def _read_rows(
            raw: Any, agent: str, win: list[int], lex: Lexical, users: list[str], show: list[int] | None
        ) -> dict[int, Any]:
            old = [o for o in win if o < lex.packed_n]
            fresh = [int(lex.new_ids[o - lex.packed_n]) for o in win if o >= lex.packed_n]
            with raw.cursor() as cur:
                if show is None:
                    cur.execute(ROWS, {"a": agent, "o": old, "u": users})
                else:
                    cur.execute(ROWS_LEAN, {"a": agent, "o": old, "s": show, "u": users})
                rows_of = {r[0]: r for r in cur.fetchall()}
                if fresh:
                    cur.execute(ROWS_DELTA, {"a": agent, "i": fresh, "u": users})
                    for r in cur.fetchall():
                        rows_of[lex.ord_of(int(r[1]), None)] = r
            return rows_of

    return PackedBackend(engine, delta)


def _ms(xs: list[float]) -> str:
    t = sorted(xs)
    n = len(t)
    return f"{statistics.median(t):.1f} / {t[int(0.9 * (n - 1))]:.1f} / {t[int(0.99 * (n - 1))]:.1f}"


def load(keep: Path, n_chunks: int, url: str) -> tuple[str, str]:
    """The kept corpus (loaded into SQLite and PostgreSQL when ``keep`` is new): (schema, URL)."""
    from pg_fidelity import _open
    from sqlalchemy import create_engine, text
    from synth_memory import generate

    keep.mkdir(parents=True, exist_ok=True)
    marker = keep / "schema"
    sep = "&" if "?" in url else "?"
    if marker.exists():
        schema = marker.read_text().strip()
        return schema, f"{url}{sep}options=-csearch_path%3D{schema},public"
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(url)
    with admin.begin() as c:
        c.execute(text(f"CREATE SCHEMA {schema}"))
    admin.dispose()
    pg_url = f"{url}{sep}options=-csearch_path%3D{schema},public"
    generate(keep / "src", n_chunks=n_chunks, n_facts=150, seed=7)
    t0 = time.perf_counter()
    _open(keep / "sqlite", None, keep / "src").close()
    _open(keep / "pg", pg_url, keep / "src", "postgresql").close()
    marker.write_text(schema)
    print(f"loaded both in {time.perf_counter() - t0:.1f} s")
    return schema, pg_url


def build(conn: Any, cut: int = 2**31 - 1) -> None:
    """(Re)create the packed tables from memory_postings, each step timed; only the chunks of
    ordinal below ``cut`` in the packed rows."""
    with conn.cursor() as cur:
        for sql in DDL:
            cur.execute(sql)
        conn.commit()
        for step, sqls in BUILD.items():
            t = time.perf_counter()
            for sql in sqls:
                cur.execute(sql, {"cut": cut} if "%(" in sql else None)
            conn.commit()
            print(f"  build {step}: {time.perf_counter() - t:.1f} s", flush=True)
        cur.execute("SELECT max(dl) FROM packed_ords")
        if cur.fetchone()[0] > 32767:
            raise SystemExit("a chunk longer than 32,767 terms: int2 lengths do not fit")


def make_delta(conn: Any, held: int) -> int:
    """The packed rows built without the agent's last ``held`` chunks, which form the delta;
    returns the ordinal they start at."""
    with conn.cursor() as cur:
        cur.execute("SELECT max(ord) + 1 FROM packed_ords")
        cut = int(cur.fetchone()[0]) - held
        conn.commit()
    build(conn, cut)
    with conn.cursor() as cur:
        t = time.perf_counter()
        for sql in (*DELTA_DDL, *DELTA_FILL):
            cur.execute(sql, {"cut": cut} if "%(" in sql else None)
        conn.commit()
        cur.execute("SELECT count(*), (SELECT count(*) FROM packed_delta_docs) FROM packed_delta")
        rows, docs = cur.fetchone()
    print(f"  delta: {docs:,} chunks, {rows:,} postings (made in {time.perf_counter() - t:.1f} s)")
    return cut


def compact(conn: Any) -> None:
    """Merge the delta into the packed rows (one transaction), timed, with its WAL."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM packed_delta d JOIN packed_postings p USING (agent_id, term) "
            "WHERE d.tf > 255 AND octet_length(p.tfs) * 4 = octet_length(p.ords)"
        )
        if cur.fetchone()[0] or conn.execute("SELECT max(dl) > 255 FROM packed_delta_docs").fetchone()[0]:
            raise SystemExit("the delta needs a uint8 row widened: not in this prototype")
        cur.execute("SELECT count(DISTINCT term) FROM packed_delta")
        terms = cur.fetchone()[0]
        cur.execute(
            "SELECT sum(octet_length(p.ords) + octet_length(p.tfs)) FROM packed_postings p "
            "WHERE (p.agent_id, p.term) IN (SELECT agent_id, term FROM packed_delta)"
        )
        rewritten = float(cur.fetchone()[0] or 0)
        conn.commit()
        cur.execute("SELECT pg_current_wal_insert_lsn()")
        lsn = cur.fetchone()[0]
        t = time.perf_counter()
        for sql in COMPACT:
            cur.execute(sql)
        conn.commit()
        elapsed = time.perf_counter() - t
        cur.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)", (lsn,))
        wal = float(cur.fetchone()[0])
        conn.commit()
    print(
        f"  compaction: {elapsed:.1f} s for {terms:,} terms whose rows held {rewritten / 2**20:.1f} MB, "
        f"WAL {wal / 2**20:.1f} MB"
    )


def sizes(conn: Any) -> None:
    with conn.cursor() as cur:
        cur.execute(
            "SELECT sum(octet_length(ords) / 4), sum(octet_length(ords) + octet_length(tfs)), count(*) "
            "FROM packed_postings"
        )
        postings, payload, lists = cur.fetchone()
        cur.execute("SELECT count(*) FROM memory_postings")
        old = cur.fetchone()[0]
        print(f"  postings: packed {postings:,} in {lists:,} lists, memory_postings {old:,} rows")
        print(f"  payload {payload / postings:.2f} bytes per posting ({payload / 2**20:.1f} MB)")
        for rel in ("packed_postings", "packed_docs", "packed_ords", "memory_postings", "memory_terms"):
            cur.execute(
                "SELECT pg_relation_size(c.oid), "
                "coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0), "
                "pg_indexes_size(c.oid), pg_total_relation_size(c.oid) FROM pg_class c "
                "WHERE c.oid = to_regclass(%s)",
                (rel,),
            )
            heap, toast, idx, tot = cur.fetchone()
            print(
                f"  {rel}: heap {heap / 2**20:.1f} MB, TOAST {toast / 2**20:.1f} MB, indexes "
                f"{idx / 2**20:.1f} MB, total {tot / 2**20:.1f} MB = {tot / old:.2f} bytes per posting"
            )


def write_cost(conn: Any, samples: int = 30) -> None:
    """One chunk write: appending to its terms' packed rows and its length to the agent's,
    against one insert through the current triggers; each in a transaction rolled back."""
    rng = random.Random(11)
    with conn.cursor() as cur:
        cur.execute("SELECT agent_id, n FROM packed_docs ORDER BY n DESC LIMIT 1")
        agent, n = cur.fetchone()
        cur.execute("SELECT chunk_id FROM packed_ords WHERE agent_id = %s", (agent,))
        ids = [r[0] for r in cur.fetchall()]
        conn.rollback()
        packed, trig, wal_p, wal_t, rewritten, nterms = [], [], [], [], [], []
        for cid in rng.sample(ids, samples):
            cur.execute("SELECT lex FROM memory_chunks WHERE id = %s", (cid,))
            words = (cur.fetchone()[0] or "").split()
            tf: dict[str, int] = {}
            for w in words:
                tf[w] = tf.get(w, 0) + 1
            conn.rollback()
            for mode in ("packed", "triggers"):
                cur.execute("SELECT pg_current_wal_insert_lsn()")
                lsn = cur.fetchone()[0]
                t = time.perf_counter()
                if mode == "packed":
                    cur.execute(
                        "UPDATE packed_postings p SET ords = p.ords || int4send(%(o)s), "
                        "tfs = p.tfs || int2send(v.tf::int2) "
                        "FROM unnest(%(t)s::text[], %(f)s::int[]) AS v(term, tf) "
                        "WHERE p.agent_id = %(a)s AND p.term = v.term",
                        {"o": n, "t": list(tf), "f": list(tf.values()), "a": agent},
                    )
                    cur.execute(
                        "UPDATE packed_docs SET n = n + 1, total = total + %(d)s, "
                        "dl = dl || int2send(%(d)s::int2) "
                        "WHERE agent_id = %(a)s",
                        {"d": len(words), "a": agent},
                    )
                else:
                    cur.execute(
                        "INSERT INTO memory_chunks (document_id, agent_id, user_id, path, start_line, "
                        "end_line, text, lex, chunk_hash) SELECT document_id, agent_id, user_id, path, "
                        "start_line + 100000, end_line + 100000, text, lex, chunk_hash FROM memory_chunks "
                        "WHERE id = %s",
                        (cid,),
                    )
                elapsed = time.perf_counter() - t
                cur.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)", (lsn,))
                wal = float(cur.fetchone()[0])
                if mode == "packed":
                    cur.execute(
                        "SELECT sum(octet_length(ords) + octet_length(tfs)) FROM packed_postings "
                        "WHERE agent_id = %s AND term = ANY(%s)",
                        (agent, list(tf)),
                    )
                    rewritten.append(float(cur.fetchone()[0]) + 2 * n)
                    nterms.append(len(tf))
                    packed.append(elapsed * 1000)
                    wal_p.append(wal)
                else:
                    trig.append(elapsed * 1000)
                    wal_t.append(wal)
                conn.rollback()
    print(
        f"  one chunk write ({samples} chunks of the {n:,}-chunk agent, median "
        f"{statistics.median(nterms):.0f} "
        f"distinct terms): packed rows rewritten p50 / p90 / p99 {_ms(packed)} ms, WAL median "
        f"{statistics.median(wal_p) / 2**20:.2f} MB, bytes of its lists median "
        f"{statistics.median(rewritten) / 2**20:.2f} MB; current triggers {_ms(trig)} ms, WAL median "
        f"{statistics.median(wal_t) / 2**10:.1f} KB"
    )


def measure(
    keep: Path,
    pg_url: str,
    rounds: int,
    delta: bool = False,
    ping: bool = True,
    lean: bool = False,
    tiers: bool = True,
) -> None:
    from sqlalchemy import text
    from synth_memory import hit_rank

    from goclaw.engine import Engine
    from goclaw_memory.pg_exact import idf
    from goclaw_memory.pg_text import bm25_from_lex

    questions = [
        q for q in (json.loads(line) for line in (keep / "src" / "questions.jsonl").open()) if q.get("expect")
    ]
    sq = Engine.open(keep / "sqlite", None)
    pg = Engine.open(keep / "pg", pg_url)
    pg.plugin_settings("memory").backend = "postgresql"
    if not ping:  # what-if: no liveness round trip when a pooled connection is checked out
        pg.db.engine.pool._pre_ping = False
    for eng in (sq, pg):
        eng.plugin_settings("memory").rerank = "none"
    svc = pg.memory
    current = svc.backend
    packed = make_packed_backend(pg, delta)
    packed.lean = lean
    users = {r[0] for r in pg.db.engine.connect().execute(text("SELECT DISTINCT user_id FROM memory_chunks"))}
    if users != {""}:
        raise SystemExit("the prototype covers agent-level chunks only")

    inner: dict[str, list[float]] = {s: [] for s in ("current", "packed", "sqlite")}
    for name, backend in (("current", current), ("packed", packed), ("sqlite", sq.memory.backend)):
        backend.search = _timed(backend.search, inner[name])  # the backend's own part of a search

    def run(system: str, q: str, channel: str) -> list[Any]:
        if system != "sqlite":
            svc._backend = packed if system == "packed" else current
        memory = sq.memory if system == "sqlite" else svc
        return memory.search_response(q, "bench", limit=K, channel=channel, include_extra=tiers).hits

    systems = ("current", "packed", "sqlite")
    print(f"  warm-up: every question once on each (load average {os.getloadavg()[0]:.1f})", flush=True)
    for q in questions:
        for s in systems:
            for channel in CHANNELS:
                run(s, q["question"], channel)
    agent = pg.agents.get("bench").id
    label = ("packed + delta" if delta else "packed") + ("" if ping else ", no pre-ping")
    label += (", lean rows" if lean else "") + ("" if tiers else ", no other tiers (all three)")
    for rnd, channel in ((r, ch) for r in range(rounds) for ch in CHANNELS):
        packed.timing.clear()
        packed.trips.clear()
        for times in inner.values():
            times.clear()
        ms: dict[str, list[float]] = {s: [] for s in systems}
        tops: dict[str, list[set[tuple[str, int]]]] = {s: [] for s in systems}
        quality = {s: [0, 0.0] for s in systems}
        worst = 0.0
        loads = [os.getloadavg()[0]]
        for i, q in enumerate(questions):
            order = systems[i % 3 :] + systems[: i % 3]
            for s in order:
                t = time.perf_counter()
                hits = run(s, q["question"], channel)
                ms[s].append((time.perf_counter() - t) * 1000)
                tops[s].append({(h.path, h.start_line) for h in hits})
                r = hit_rank(hits, q["expect"])
                if r:
                    quality[s][0] += 1
                    quality[s][1] += 1 / r
                if s == "packed" and rnd == 0:
                    worst = max(worst, _check(pg, agent, q["question"], packed.last, idf, bm25_from_lex))
            if i % 150 == 149:
                loads.append(os.getloadavg()[0])
        n = len(questions)
        print(
            f"  round {rnd + 1}, {channel} ({label}): {n} questions, load average "
            f"{min(loads):.1f}-{max(loads):.1f}"
        )
        for s in systems:
            ov = statistics.mean(
                len(a & b) / max(1, len(b)) for a, b in zip(tops[s], tops["sqlite"], strict=True)
            )
            print(
                f"    {s:8s} p50 / p90 / p99 {_ms(ms[s])} ms; hit@10 {quality[s][0] / n:.3f} "
                f"MRR {quality[s][1] / n:.3f}; top-10 overlap with SQLite {ov:.3f}; "
                f"the backend's search alone {_ms([t * 1000 for t in inner[s]])} ms"
            )
        ov = statistics.mean(
            len(a & b) / max(1, len(b)) for a, b in zip(tops["packed"], tops["current"], strict=True)
        )
        print(f"    packed against current: top-10 overlap {ov:.3f}")
        if rnd == 0:
            print(
                "    packed winners' BM25 against bm25_from_lex + trigger statistics: "
                f"max relative error {worst:.2e}"
            )
        tm = np.array(packed.timing) * np.array([1000, 1000, 1000, 1000, 1, 1])
        posts = tm[:, 5]
        heavy = posts >= np.quantile(posts, 0.9)
        med = np.median(tm, axis=0)
        print(
            f"    packed breakdown, median ms: fetch {med[0]:.2f}, numpy {med[1]:.2f}, vector {med[2]:.2f}, "
            f"rows {med[3]:.2f}; bytes fetched median {med[4] / 1024:.0f} KB, postings median "
            f"{med[5]:,.0f}, max {posts.max():,.0f}"
        )
        print(
            f"    the 10% of questions with the most postings (>= {np.quantile(posts, 0.9):,.0f}): p50 ms "
            + ", ".join(f"{s} {statistics.median(np.array(ms[s])[heavy]):.1f}" for s in systems)
            + f"; packed fetch {np.median(tm[heavy, 0]):.2f}, numpy {np.median(tm[heavy, 1]):.2f}"
        )
        if packed.trips:
            trips = np.array(packed.trips)
            print(
                f"    packed vector statements per search: 1 in {np.mean(trips == 1):.0%} of searches, "
                f"max {trips.max()}"
            )
    sq.close()
    pg.close()


def _timed(fn: Any, out: list[float]) -> Any:
    def timed(query: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(query)
        finally:
            out.append(time.perf_counter() - t)

    return timed


def _check(pg: Any, agent: str, question: str, last: dict[int, float], idf: Any, bm25: Any) -> float:
    """The largest relative difference between the prototype's BM25 of its winners and the one
    computed from their stored terms with the trigger-kept statistics (an independent source)."""
    from sqlalchemy import text

    from goclaw_search.tokenize import query_terms

    terms = tuple(query_terms(question))
    with pg.db.engine.connect() as c:
        n, total = c.execute(
            text("SELECT sum(chunks), sum(terms) FROM memory_agent_stats WHERE agent_id = :a"), {"a": agent}
        ).one()
        dfs = dict(
            c.execute(
                text(
                    "SELECT term, sum(df) FROM memory_term_stats WHERE agent_id = :a AND term = ANY(:t) "
                    "GROUP BY term HAVING sum(df) > 0"
                ),
                {"a": agent, "t": list(set(terms))},
            ).all()
        )
        lex = dict(
            c.execute(text("SELECT id, lex FROM memory_chunks WHERE id = ANY(:i)"), {"i": list(last)}).all()
        )
    idfs = {t: idf(float(d), float(n)) for t, d in dfs.items()}
    worst = 0.0
    for cid, score in last.items():
        want = bm25(lex[cid], [t for t in terms if t in idfs], idfs, float(total) / float(n))
        worst = max(worst, abs(score - want) / max(abs(want), 1e-12))
    return worst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", required=True, metavar="DIR", help="the kept corpus and schema name")
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=2, help="measured passes over the questions")
    ap.add_argument(
        "--delta", type=int, default=1000, help="then: the last N chunks as a delta, searched, compacted"
    )
    ap.add_argument(
        "--searches-only",
        action="store_true",
        help="no build, sizes or writes: the packed rows of a run before",
    )
    ap.add_argument("--no-pre-ping", action="store_true", help="what-if: PostgreSQL pool without pre-ping")
    ap.add_argument(
        "--lean", action="store_true", help="what-if: (b) reads the rows of the shown winners only"
    )
    ap.add_argument(
        "--no-tiers", action="store_true", help="what-if: no other plugins' tiers (all three systems)"
    )
    ap.add_argument("--drop", action="store_true", help="drop the kept schema and DIR, then exit")
    args = ap.parse_args()
    url = os.environ.get("GOCLAW_BENCH_DATABASE_URL") or os.environ.get("GOCLAW_TEST_DATABASE_URL")
    if not url:
        print("error: set GOCLAW_BENCH_DATABASE_URL to a PostgreSQL URL with pgvector", file=sys.stderr)
        return 2
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    keep = Path(args.keep)
    import psycopg

    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    if args.drop:
        marker = keep / "schema"
        if marker.exists():
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {marker.read_text().strip()} CASCADE")
        shutil.rmtree(keep, ignore_errors=True)
        return 0
    schema, pg_url = load(keep, args.chunks, url)
    print(f"{args.chunks:,} chunks, schema {schema}, load average {os.getloadavg()[0]:.1f}", flush=True)
    if not args.searches_only:
        with psycopg.connect(dsn, options=f"-csearch_path={schema},public") as conn:
            build(conn)
            sizes(conn)
            write_cost(conn)
    measure(keep, pg_url, args.rounds, ping=not args.no_pre_ping, lean=args.lean, tiers=not args.no_tiers)
    if args.delta > 0:
        with psycopg.connect(dsn, options=f"-csearch_path={schema},public") as conn:
            make_delta(conn, args.delta)
        measure(keep, pg_url, 1, delta=True)
        with psycopg.connect(dsn, options=f"-csearch_path={schema},public") as conn:
            compact(conn)
        measure(keep, pg_url, 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
