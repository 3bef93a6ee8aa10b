"""Search backends for the memory index: full text and vectors on SQLite and PostgreSQL (spec §15).

Both implement :class:`MemorySearchBackend`: the channels return ``[(chunk_id, raw_score)]``,
best first, restricted to one agent and the given user scopes (``""`` = agent level) in SQL,
so no other scope's rows can ever come back. :func:`goclaw_memory.hybrid.hybrid_merge` fuses
them.

* SQLite: FTS5 (``memory_chunks_fts``, external content synced by triggers), ``bm25()``; vectors
  are float32 BLOBs searched exactly (cosine) in numpy over an in-memory matrix per
  (agent, provider, model, dim). The matrix is refreshed when the agent's index version token
  (``worker_state``, bumped in every indexing transaction, by any process) changes.
* PostgreSQL: the generated ``tsv`` column + GIN with ``ts_rank``; pgvector HNSW cosine indexes
  created at run time per dimension as partial expression indexes, queried with the same
  expression and predicate, with ``hnsw.ef_search`` raised above the candidate count (and
  iterative scans on pgvector ≥ 0.8) so a LIMIT above 40 is honoured.

Query text is user input: it is reduced to word tokens, each quoted, joined with OR
(DECISIONS.md: any term may match), so FTS syntax in it (quotes, NEAR, ``*``, ``-``,
parentheses, column filters) is searched as text and never parsed.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import text

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from goclaw.engine import Engine

log = logging.getLogger(__name__)

MAX_QUERY_TERMS = 32
VERSION_WORKER = "goclaw.memory.index"
_TOKEN_RE = re.compile(r"\w+", re.UNICODE)


# English function words dropped from full-text queries when the query has other terms: with
# any-term matching they match nearly every chunk, cost the most to rank, and add ~nothing.
STOPWORDS = frozenset(
    {
        "a",
        "about",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    }
)


def query_terms(query: str) -> list[str]:
    """Word tokens of a query, lower-cased, de-duplicated, at most :data:`MAX_QUERY_TERMS`;
    stopwords are dropped unless the query has nothing else."""
    seen: dict[str, None] = {}
    for tok in _TOKEN_RE.findall(query.lower()):
        for part in tok.split("_"):  # both tokenizers treat '_' as a separator
            if part and part not in seen:
                seen[part] = None
    terms = list(seen)
    content = [t for t in terms if t not in STOPWORDS]
    return (content or terms)[:MAX_QUERY_TERMS]


# SQLite: at most this many matches are enumerated per query (the sum of the kept terms'
# document frequencies). Terms beyond it are "common": in a hybrid search they still score the
# enumerated matches and the vector candidates; alone, the full-text channel drops them (the
# rarest term is always kept). Their IDF is low anyway. FTS5 ranks a match in ~1 µs.
RANK_BUDGET = 5_000
# PostgreSQL visits each match's heap row and tsvector: ~1 µs per match with the table in
# shared buffers, ~5 µs from the OS cache. Matches beyond this are not enumerated (see
# PostgresSearchBackend.lexical).
PG_RANK_BUDGET = 1_000
# Up to this many query terms, each gets its own IDF-weighted ts_rank.
PG_PER_TERM_RANKS = 6


@dataclass(frozen=True)
class _PgStats:
    """Document frequencies estimated from ``pg_stats`` (table-wide, all agents)."""

    df: dict[str, int]
    rows: float
    unlisted: float  # lexemes missing from ``df`` are rarer than this
    avgdl: float = 0.0  # tokens per chunk, from a sample (0 = unknown)

    def freq(self, terms: Sequence[str]) -> dict[str, int]:
        """Estimated document frequency of each term (unlisted ones: half the floor)."""
        return {t: int(self.df.get(t, self.unlisted / 2)) for t in terms}

    def idf(self, terms: Sequence[str]) -> float:
        """Mean BM25 IDF of ``terms``; 1.0 without statistics."""
        if self.rows <= 0:
            return 1.0
        n = self.rows
        total = 0.0
        for t in terms:
            d = float(self.df.get(t, self.unlisted / 2))
            total += math.log(1.0 + (n - d + 0.5) / (d + 0.5))
        return total / max(1, len(terms))


def split_terms(
    terms: Sequence[str], doc_freq: dict[str, int], budget: int, *, keep_rarest: bool = False
) -> tuple[list[str], list[str]]:
    """``(selective, common)``: the rarest terms whose matches together stay within ``budget``,
    and the rest (query order kept in both). Terms of unknown frequency count as rare.
    With ``keep_rarest`` the rarest term is selective even when it alone exceeds the budget."""
    ordered = sorted(range(len(terms)), key=lambda i: (doc_freq.get(terms[i], 0), i))
    kept: set[int] = set()
    total = 0
    for i in ordered:
        n = doc_freq.get(terms[i], 0)
        if total + n > budget and (kept or not keep_rarest):
            break
        kept.add(i)
        total += n
    return (
        [t for i, t in enumerate(terms) if i in kept],
        [t for i, t in enumerate(terms) if i not in kept],
    )


def prune_terms(terms: Sequence[str], doc_freq: dict[str, int], budget: int | None = None) -> list[str]:
    """The rarest terms whose matches together stay within ``budget`` (query order kept);
    the rarest term is always kept."""
    budget = RANK_BUDGET if budget is None else budget
    return split_terms(terms, doc_freq, budget, keep_rarest=True)[0]


def fts5_match_expression(query: str, terms: Sequence[str] | None = None) -> str | None:
    """An FTS5 MATCH string: every term double-quoted, OR-ed. ``None`` when nothing to search."""
    terms = query_terms(query) if terms is None else list(terms)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def tsquery_expression(query: str, terms: Sequence[str] | None = None) -> str | None:
    """A ``to_tsquery('simple', ...)`` string: every term single-quoted, OR-ed with ``|``."""
    terms = query_terms(query) if terms is None else list(terms)
    if not terms:
        return None
    return " | ".join("'" + t.replace("'", "''").replace("\\", "") + "'" for t in terms)


@dataclass(frozen=True)
class ChunkRow:
    id: int
    user_id: str
    path: str
    start_line: int
    end_line: int
    text: str


class MemorySearchBackend(Protocol):
    """What the memory service needs from a database backend.

    A backend whose ``lexical_candidates`` attribute is true gets the vector channel's ids as
    ``lexical(..., candidates=ids)`` (the service then runs the vector channel first), so it
    may score those ids instead of enumerating every match of a very common word.
    """

    name: str

    def lexical(
        self, agent_id: str, users: Sequence[str], query: str, limit: int, conn: Any = None
    ) -> list[tuple[int, float]]:
        """Full-text candidates ``(chunk_id, raw score > 0)``, best first."""
        ...

    def vector(
        self,
        agent_id: str,
        users: Sequence[str],
        query_vector: Any,
        space: tuple[str, str, int],
        limit: int,
        conn: Any = None,
    ) -> list[tuple[int, float]]:
        """Nearest chunks by cosine similarity in the ``(provider, model, dim)`` space."""
        ...

    def prepare_vectors(self, dim: int) -> None:
        """Create whatever index a new dimension needs (before vectors of it are written)."""
        ...

    def rows(self, ids: Sequence[int], conn: Any = None) -> dict[int, ChunkRow]:
        """The chunks with these ids."""
        ...


# --------------------------------------------------------------------------- shared helpers


@contextmanager
def _connection(engine: Engine, conn: Any) -> Iterator[Any]:
    """Use the caller's connection (one per search) or open one."""
    if conn is not None:
        yield conn
        return
    with engine.db.engine.connect() as own:
        yield own


def read_version(conn: Any, agent_id: str) -> str:
    row = conn.execute(
        text("SELECT value FROM worker_state WHERE worker = :w AND scope = :s"),
        {"w": VERSION_WORKER, "s": agent_id},
    ).first()
    if row is None:
        return ""
    value = row[0]
    if isinstance(value, str) and value.startswith("{"):  # JSON as text (SQLite, plain SQL)
        try:
            value = json.loads(value)
        except ValueError:
            return value
    if isinstance(value, dict):
        return str(value.get("token", ""))
    return str(value)


def fetch_rows(engine: Engine, ids: Sequence[int], conn: Any = None) -> dict[int, ChunkRow]:
    if not ids:
        return {}
    out: dict[int, ChunkRow] = {}
    with _connection(engine, conn) as conn:
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ", ".join(f":i{i}" for i in range(len(part)))
            result = conn.execute(
                text(
                    "SELECT id, user_id, path, start_line, end_line, text FROM memory_chunks "
                    f"WHERE id IN ({marks})"
                ),
                {f"i{i}": v for i, v in enumerate(part)},
            )
            for r in result:
                out[int(r[0])] = ChunkRow(int(r[0]), r[1], r[2], int(r[3]), int(r[4]), r[5])
    return out


# --------------------------------------------------------------------------- SQLite

_FTS_TOKEN_RE = re.compile(r"[^\W_]+", re.UNICODE)


def _fold(word: str) -> str:
    """Lower case without diacritics, as FTS5's ``unicode61 remove_diacritics 2`` folds."""
    word = word.lower()
    if word.isascii():
        return word
    return "".join(ch for ch in unicodedata.normalize("NFD", word) if not unicodedata.combining(ch))


def bm25_score(
    body: str,
    terms: Sequence[str],
    doc_freq: dict[str, int],
    n_rows: int,
    avgdl: float,
    fold: Callable[[str], str] | None = None,
) -> float:
    """FTS5's ``bm25()`` (k1 = 1.2, b = 0.75, IDF floored at 1e-6), sign flipped. ``fold``
    normalises a token (default: FTS5's lower case without diacritics)."""
    fold = fold or _fold
    tokens = [fold(t) for t in _FTS_TOKEN_RE.findall(body)]
    if not tokens:
        return 0.0
    counts: dict[str, int] = {}
    wanted = {fold(t) for t in terms}
    for tok in tokens:
        if tok in wanted:
            counts[tok] = counts.get(tok, 0) + 1
    norm = 1.2 * (0.25 + 0.75 * len(tokens) / max(avgdl, 1e-9))
    score = 0.0
    for term in wanted:
        tf = counts.get(term, 0)
        if not tf:
            continue
        n = doc_freq.get(term, 0)
        idf = math.log((n_rows - n + 0.5) / (n + 0.5)) if n_rows else 0.0
        score += max(idf, 1e-6) * tf * 2.2 / (tf + norm)
    return score


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """An SQLite varint at ``pos``: ``(value, next position)``."""
    value = 0
    for i in range(9):
        byte = data[pos + i]
        if i == 8:
            return (value << 8) | byte, pos + 9
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, pos + i + 1
    return value, pos + 9


def _fts5_totals(conn: Any) -> tuple[int, int] | None:
    """(rows, tokens) of ``memory_chunks_fts`` from its averages record (rowid 1 of the
    ``_data`` table: a varint row count, then a token total per column)."""
    try:
        with conn.begin_nested():
            row = conn.exec_driver_sql("SELECT block FROM memory_chunks_fts_data WHERE id = 1").first()
        if row is None or not row[0]:
            return None
        data = bytes(row[0])
        n_rows, pos = _varint(data, 0)
        n_tokens, _ = _varint(data, pos)
    except Exception:
        log.debug("fts5 averages record unreadable", exc_info=True)
        return None
    return (n_rows, n_tokens) if n_rows > 0 and n_tokens > 0 else None


class _Matrix:
    """One (agent, space)'s normalised vectors: the first ``n`` rows of buffers with headroom,
    so an index run's changes are patched in place (swap-remove, append) instead of copying
    ~100 MB at 100k chunks. ``lock`` guards reads against a concurrent patch."""

    def __init__(
        self,
        token: str,
        ids: NDArray[np.int64],
        user_codes: NDArray[np.int32],
        users: dict[str, int],
        matrix: NDArray[np.float32],
    ) -> None:
        self.token = token
        self.users = users
        self._ids = ids
        self._codes = user_codes
        self._buf = matrix
        self.n = len(ids)
        self.lock = threading.Lock()

    @property
    def ids(self) -> NDArray[np.int64]:
        return self._ids[: self.n]

    @property
    def user_codes(self) -> NDArray[np.int32]:
        return self._codes[: self.n]

    @property
    def matrix(self) -> NDArray[np.float32]:
        return self._buf[: self.n]

    def patch(self, token: str, removed: set[int], rows: list[tuple[int, str, Any]]) -> None:
        """Drop the rows whose id is in ``removed``, append ``rows`` ``(id, user, vector)``
        (normalised here); the caller holds ``lock``."""
        import numpy as np

        n = self.n
        if removed:
            gone = np.fromiter(removed, dtype=np.int64, count=len(removed))
            for p in np.flatnonzero(np.isin(self._ids[:n], gone))[::-1]:
                last = n - 1  # rows after p are live: larger removed positions went first
                if p != last:
                    self._buf[p] = self._buf[last]
                    self._ids[p] = self._ids[last]
                    self._codes[p] = self._codes[last]
                n -= 1
        if rows:
            need = n + len(rows)
            if need > len(self._ids):
                cap = need + need // 4 + 16
                buf = np.empty((cap, self._buf.shape[1]), dtype=np.float32)
                ids = np.empty(cap, dtype=np.int64)
                codes = np.empty(cap, dtype=np.int32)
                buf[:n], ids[:n], codes[:n] = self._buf[:n], self._ids[:n], self._codes[:n]
                self._buf, self._ids, self._codes = buf, ids, codes
            vecs = np.asarray([v for _i, _u, v in rows], dtype=np.float32).reshape(len(rows), -1)
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            self._buf[n:need] = vecs / norms
            self._ids[n:need] = [i for i, _u, _v in rows]
            self._codes[n:need] = [self.users.setdefault(u, len(self.users)) for _i, u, _v in rows]
            n = need
        self.n = n
        self.token = token


class SQLiteSearchBackend:
    """FTS5 + exact numpy cosine over an in-memory matrix (DESIGN.md §4)."""

    name = "sqlite"
    lexical_candidates = True

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lock = threading.Lock()
        self._matrices: dict[tuple[str, str, str, int], _Matrix] = {}
        self.loads = 0  # full matrix loads and patches (tests and benchmarks read these)
        self.patches = 0

    def lexical(
        self,
        agent_id: str,
        users: Sequence[str],
        query: str,
        limit: int,
        conn: Any = None,
        candidates: Sequence[int] | None = None,
    ) -> list[tuple[int, float]]:
        """Full-text candidates by FTS5's ``bm25()``, under the common-terms rule.

        Terms are kept rarest first within :data:`RANK_BUDGET` matches (see
        :func:`split_terms`). Alone (``candidates`` None) the kept terms' best ``limit``
        matches are ranked; the rarest term is always kept. In a hybrid search the selective
        terms' best matches and the ``candidates`` (the vector channel's ids) are all scored
        by bm25 over every query term, so the merge weighs a vector hit's words by what they
        are worth instead of counting them as no match."""
        terms = query_terms(query)
        if not terms:
            return []
        with _connection(self.engine, conn) as c:
            freq = self._doc_freq(c, terms) if len(terms) > 1 or candidates is not None else {}
            kept, _common = split_terms(terms, freq, RANK_BUDGET, keep_rarest=candidates is None)
            if candidates is None:
                # Full text alone: rank the matches of the kept terms.
                return self._lexical(c, agent_id, users, kept, limit)
            # Hybrid: the best matches of the selective terms (none when every term is common)
            # and the vector candidates, all scored by bm25 over every query term.
            ids = [i for i, _ in self._lexical(c, agent_id, users, kept, limit)] if kept else []
            ids = list(dict.fromkeys([*ids, *(int(i) for i in candidates)]))
            found = self._scores(c, agent_id, users, terms, ids, freq) if ids else []
            return sorted(found, key=lambda h: -h[1])

    def _scores(
        self,
        conn: Any,
        agent_id: str,
        users: Sequence[str],
        terms: Sequence[str],
        ids: Sequence[int],
        freq: dict[str, int],
    ) -> list[tuple[int, float]]:
        """FTS5's ``bm25()`` of those of these chunks that match and belong to the scope.

        Computed here from the chunks' text and FTS5's own statistics (row count and token
        total from the index's averages record, document frequencies from ``fts5vocab``):
        asking FTS5 for a few rowids still walks the whole doclist of every term, ~5 ms at
        100k chunks for common words. Falls back to that query if the statistics are not
        readable."""
        marks = ", ".join(f":i{n}" for n in range(len(ids)))
        umarks = ", ".join(f":u{n}" for n in range(len(users)))
        params: dict[str, Any] = {"a": agent_id}
        params.update({f"i{n}": v for n, v in enumerate(ids)})
        params.update({f"u{n}": u for n, u in enumerate(users)})
        totals = _fts5_totals(conn)
        if not totals or not freq:
            params["m"] = fts5_match_expression("", terms)
            rows = conn.execute(
                text(
                    "SELECT f.id, f.r FROM (SELECT rowid AS id, bm25(memory_chunks_fts) AS r "
                    f"FROM memory_chunks_fts WHERE memory_chunks_fts MATCH :m AND rowid IN ({marks})) AS f "
                    f"JOIN memory_chunks c ON c.id = f.id WHERE c.agent_id = :a AND c.user_id IN ({umarks})"
                ),
                params,
            ).all()
            return [(int(i), -float(r)) for i, r in rows if -float(r) > 0]
        n_rows, n_tokens = totals
        texts = conn.execute(
            text(
                f"SELECT id, text FROM memory_chunks WHERE id IN ({marks}) AND agent_id = :a "
                f"AND user_id IN ({umarks})"
            ),
            params,
        ).all()
        return [
            (int(i), score)
            for i, body in texts
            if (score := bm25_score(body or "", terms, freq, n_rows, n_tokens / max(1, n_rows))) > 0
        ]

    def _doc_freq(self, conn: Any, terms: Sequence[str]) -> dict[str, int]:
        """Rows containing each term, from an ``fts5vocab`` view (per connection, in temp)."""
        try:
            with conn.begin_nested():
                conn.exec_driver_sql(
                    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.goclaw_memory_vocab "
                    "USING fts5vocab(main, memory_chunks_fts, row)"
                )
                marks = ", ".join(f":t{i}" for i in range(len(terms)))
                rows = conn.execute(
                    text(f"SELECT term, doc FROM temp.goclaw_memory_vocab WHERE term IN ({marks})"),
                    {f"t{i}": t for i, t in enumerate(terms)},
                ).all()
        except Exception:  # no pruning is always correct, only slower
            log.debug("fts5vocab lookup failed", exc_info=True)
            return {}
        return {r[0]: int(r[1]) for r in rows}

    def _lexical(
        self, conn: Any, agent_id: str, users: Sequence[str], terms: Sequence[str], limit: int
    ) -> list[tuple[int, float]]:
        match = fts5_match_expression("", terms)
        marks = ", ".join(f":u{i}" for i in range(len(users)))
        inner = max(200, int(limit) * 8)
        params: dict[str, Any] = {"m": match, "a": agent_id, "k": int(limit), "inner": inner}
        params.update({f"u{i}": u for i, u in enumerate(users)})
        scope = f"c.agent_id = :a AND c.user_id IN ({marks})"
        # Phase 1: the best `inner` matches of the whole table (bm25 in FTS5's C code, no join
        # per match), then the scope filter. Exact whenever the scope keeps `limit` of them.
        fast = (
            "SELECT c.id, f.r FROM (SELECT rowid AS id, bm25(memory_chunks_fts) AS r "
            "FROM memory_chunks_fts WHERE memory_chunks_fts MATCH :m ORDER BY r LIMIT :inner) AS f "
            f"JOIN memory_chunks c ON c.id = f.id WHERE {scope} ORDER BY f.r LIMIT :k"
        )
        # Phase 2 (other scopes crowd the top): rank only this scope's matches.
        exact = (
            "SELECT c.id, bm25(memory_chunks_fts) AS r FROM memory_chunks_fts "
            "JOIN memory_chunks c ON c.id = memory_chunks_fts.rowid "
            f"WHERE memory_chunks_fts MATCH :m AND {scope} ORDER BY r LIMIT :k"
        )
        result = conn.execute(text(fast), params).all()
        if len(result) < int(limit):
            total = conn.execute(
                text(
                    "SELECT count(*) FROM (SELECT rowid FROM memory_chunks_fts "
                    "WHERE memory_chunks_fts MATCH :m LIMIT :inner)"
                ),
                params,
            ).scalar_one()
            if total >= inner:
                result = conn.execute(text(exact), params).all()
        # bm25() is "lower is better" and negative; flip the sign so higher is better.
        return [(int(i), -float(r)) for i, r in result if -float(r) > 0]

    def prepare_vectors(self, dim: int) -> None:
        return None

    def rows(self, ids: Sequence[int], conn: Any = None) -> dict[int, ChunkRow]:
        return fetch_rows(self.engine, ids, conn)

    def invalidate(self, agent_id: str | None = None) -> None:
        with self._lock:
            if agent_id is None:
                self._matrices.clear()
            else:
                for key in [k for k in self._matrices if k[0] == agent_id]:
                    del self._matrices[key]

    def apply_changes(self, changes: Any) -> None:
        """Patch the agent's cached matrices with an index run's removed and added rows.

        ``changes`` is a :class:`goclaw_memory.indexer.ChangeSet`. A patch is exact only when
        the matrix was loaded at the run's starting token and no other process wrote during
        the run (its tokens chain); otherwise the matrix is dropped and reloaded on the next
        search, as before. At 100k chunks a reload costs about a second; a patch costs
        little more than finding the removed ids.
        """
        if changes.last is None:  # nothing written
            return
        with self._lock:
            for key in [k for k in self._matrices if k[0] == changes.agent_id]:
                m = self._matrices.pop(key)
                if m.token == changes.last:  # a search loaded it after the run: already current
                    self._matrices[key] = m
                    continue
                if not changes.chained or m.token != changes.first:
                    continue
                space = (key[1], key[2], key[3])
                new = [(i, u, v) for i, (u, sp, v) in changes.added.items() if sp == space and v is not None]
                with m.lock:
                    m.patch(changes.last, changes.removed, new)
                self._matrices[key] = m
                self.patches += 1

    def _matrix(self, agent_id: str, space: tuple[str, str, int], conn: Any = None) -> _Matrix:
        import numpy as np

        provider, model, dim = space
        key = (agent_id, provider, model, dim)
        with _connection(self.engine, conn) as conn:
            token = read_version(conn, agent_id)
            with self._lock:
                cached = self._matrices.get(key)
                if cached is not None and cached.token == token:
                    return cached
            raw = conn.exec_driver_sql(
                "SELECT id, user_id, embedding FROM memory_chunks WHERE agent_id = ? "
                "AND embedding_dim = ? AND embedding_provider = ? AND embedding_model = ? "
                "AND embedding IS NOT NULL ORDER BY id",
                (agent_id, dim, provider, model),
            ).all()
        users: dict[str, int] = {}
        ids = np.fromiter((r[0] for r in raw), dtype=np.int64, count=len(raw))
        codes = np.fromiter((users.setdefault(r[1], len(users)) for r in raw), dtype=np.int32, count=len(raw))
        if raw:
            matrix = np.frombuffer(b"".join(bytes(r[2]) for r in raw), dtype=np.float32).reshape(
                len(raw), dim
            )
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            matrix = np.ascontiguousarray(matrix / norms, dtype=np.float32)
        else:
            matrix = np.zeros((0, dim), dtype=np.float32)
        built = _Matrix(token, ids, codes, users, matrix)
        with self._lock:
            self._matrices[key] = built
            self.loads += 1
        return built

    def vector(
        self,
        agent_id: str,
        users: Sequence[str],
        query_vector: Any,
        space: tuple[str, str, int],
        limit: int,
        conn: Any = None,
    ) -> list[tuple[int, float]]:
        import numpy as np

        q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        if norm == 0.0:
            return []
        m = self._matrix(agent_id, space, conn)
        with m.lock:
            if m.n == 0:
                return []
            sims = m.matrix @ (q / norm)
            codes = [m.users[u] for u in users if u in m.users]
            if not codes:
                return []
            if len(codes) != len(m.users):
                mask = np.isin(m.user_codes, np.asarray(codes, dtype=np.int32))
                sims = np.where(mask, sims, -np.inf)
            k = min(int(limit), sims.shape[0])
            top = np.argpartition(-sims, k - 1)[:k]
            top = top[np.argsort(-sims[top], kind="stable")]
            ids = m.ids
            return [(int(ids[i]), float(sims[i])) for i in top if np.isfinite(sims[i])]


# --------------------------------------------------------------------------- PostgreSQL


class PostgresSearchBackend:
    """tsvector + GIN and pgvector HNSW (DESIGN.md §4)."""

    name = "postgresql"
    lexical_candidates = True

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._prepared: set[int] = set()
        self._deferred: set[int] = set()
        self._bulk = 0  # open bulk_load() blocks
        self._lock = threading.Lock()
        self._iterative: bool | None = None
        self._stats: tuple[float, _PgStats] = (float("-inf"), _PgStats({}, 0.0, 0.0))

    def _doc_freq(self, conn: Any) -> _PgStats:
        """Estimated rows per common lexeme from the planner's statistics (refreshed each minute)."""
        fetched, stats = self._stats
        if time.monotonic() - fetched < 60:
            return stats
        stats = _PgStats({}, 0.0, 0.0)
        try:
            with conn.begin_nested():
                row = conn.execute(
                    text(
                        "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples "
                        "FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename "
                        "AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = s.schemaname) "
                        "WHERE s.tablename = 'memory_chunks' AND s.attname = 'tsv' "
                        "AND s.schemaname = current_schema()"
                    )
                ).first()
            if row is not None and row[0] is not None and row[1] is not None:
                total = max(0.0, float(row[2] or 0))
                elems, freqs = list(row[0]), [float(f) for f in row[1]]
                # After one frequency per element PostgreSQL appends the minimum, the maximum
                # and the null fraction: lexemes not listed are rarer than that minimum.
                floor = freqs[len(elems)] if len(freqs) > len(elems) else 0.0
                stats = _PgStats(
                    {e: int(f * total) for e, f in zip(elems, freqs, strict=False)},
                    total,
                    floor * total,
                    self._avgdl(conn, total),
                )
        except Exception:
            log.debug("pg_stats lookup failed", exc_info=True)
        self._stats = (time.monotonic(), stats)
        return stats

    @staticmethod
    def _avgdl(conn: Any, rows: float) -> float:
        """Mean tokens per chunk over a sample of about 2,000 chunks (0.0 when empty)."""
        percent = min(100.0, max(0.01, 100.0 * 2000 / max(rows, 1.0)))
        with conn.begin_nested():
            texts = conn.execute(
                text(f"SELECT text FROM memory_chunks TABLESAMPLE SYSTEM ({percent:.4f}) LIMIT 2000")
            ).scalars()
            counts = [len(_FTS_TOKEN_RE.findall(t or "")) for t in texts]
        return sum(counts) / len(counts) if counts else 0.0

    def lexical(
        self,
        agent_id: str,
        users: Sequence[str],
        query: str,
        limit: int,
        conn: Any = None,
        candidates: Sequence[int] | None = None,
    ) -> list[tuple[int, float]]:
        """Full-text candidates, ranked by ``ts_rank`` weighted by each term's rarity.

        Terms are split by their estimated document frequency (see :func:`split_terms`):
        every match of the *selective* terms is ranked; the *common* terms (which together
        would match more than :data:`PG_RANK_BUDGET` rows) only add to the score of those
        matches and of ``candidates`` (the vector channel's ids). This is the "common terms"
        query of Lucene/Elasticsearch: ranking the tens of thousands of chunks that contain a
        frequent word costs ~1-5 µs each in PostgreSQL and tells the merge almost nothing.
        With only common terms and no candidates (full-text only), the chunks holding every
        term are ranked when few, else the rarest term's matches. Returns the best ``limit``
        matches plus every candidate that matches.

        In a hybrid search (``candidates`` given) the rows found are then scored by BM25 over
        every query term, from their text and the ``pg_stats`` estimates (the same formula
        as FTS5's ``bm25()`` on SQLite), so both backends rank a query's hits alike.
        """
        terms = query_terms(query)
        if not terms:
            return []
        with _connection(self.engine, conn) as c:
            stats = self._doc_freq(c) if len(terms) > 1 or candidates is not None else _PgStats({}, 0, 0)
            cand = [int(i) for i in candidates or ()]
            selective, common = split_terms(terms, stats.df, PG_RANK_BUDGET)
            conjunction = False
            if not selective and not cand:
                # Only common terms and nothing to rescore (full text alone): when the chunks
                # holding *every* term are few enough (independence estimate), rank those
                # first; they lead any-term ranking anyway. Else the rarest term's matches.
                both = stats.rows * math.prod(stats.df.get(t, 0) / max(stats.rows, 1.0) for t in terms)
                conjunction = len(terms) > 1 and both <= 4 * PG_RANK_BUDGET
                selective, common = split_terms(terms, stats.df, PG_RANK_BUDGET, keep_rarest=True)
            params: dict[str, Any] = {"a": agent_id, "users": list(users), "k": int(limit)}
            # Each term's ts_rank weighted by its IDF (a BM25-like sum); beyond a few terms,
            # one ts_rank per group (selective, common) keeps the cost per row bounded.
            ranks: list[str] = []
            per_term = len(terms) <= PG_PER_TERM_RANKS
            groups = [[t] for t in terms] if per_term else [g for g in (selective, common) if g]
            for n, group in enumerate(groups):
                params[f"q{n}"] = tsquery_expression("", group)
                params[f"w{n}"] = stats.idf(group)
                ranks.append(f":w{n} * ts_rank(tsv, to_tsquery('simple', :q{n}))")
            head = (
                f"SELECT id, text, {' + '.join(ranks)} AS r FROM memory_chunks "
                "WHERE agent_id = :a AND user_id = ANY(:users) AND "
            )
            if conjunction:
                params["and"] = " & ".join(f"({tsquery_expression('', [t])})" for t in terms)
                result = c.execute(
                    text(f"{head}tsv @@ to_tsquery('simple', :and) ORDER BY r DESC LIMIT :k"), params
                ).all()
                if len(result) >= int(limit):
                    return [(int(i), float(r)) for i, _body, r in result if float(r) > 0]
            parts: list[str] = []
            if selective:
                # The best `limit` matches of the selective terms...
                params["s"] = tsquery_expression("", selective)
                parts.append(
                    f"(SELECT * FROM ({head}tsv @@ to_tsquery('simple', :s) ORDER BY r DESC LIMIT :k) AS t)"
                )
            if cand:
                # ... plus every candidate that matches any term, with its own score.
                params["all"] = tsquery_expression("", terms)
                params["ids"] = cand
                parts.append(f"({head}id = ANY(:ids) AND tsv @@ to_tsquery('simple', :all))")
            result = c.execute(text(" UNION ALL ".join(parts)), params).all()
        best: dict[int, float] = {}
        if candidates is not None and stats.rows > 0 and stats.avgdl > 0:
            freq = stats.freq(terms)
            for i, body, _r in result:
                score = bm25_score(body or "", terms, freq, int(stats.rows), stats.avgdl, fold=str.lower)
                if score > 0:
                    best[int(i)] = score
        else:
            for i, _body, r in result:
                if float(r) > 0:
                    best[int(i)] = float(r)
        return sorted(best.items(), key=lambda h: -h[1])

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

    def rows(self, ids: Sequence[int], conn: Any = None) -> dict[int, ChunkRow]:
        return fetch_rows(self.engine, ids, conn)

    def invalidate(self, agent_id: str | None = None) -> None:
        return None

    def vector(
        self,
        agent_id: str,
        users: Sequence[str],
        query_vector: Any,
        space: tuple[str, str, int],
        limit: int,
        conn: Any = None,
    ) -> list[tuple[int, float]]:
        import numpy as np

        provider, model, dim = space
        dim = int(dim)
        q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        if not np.any(q):
            return []
        # Same expression and (literal) predicate as the partial HNSW index, so it is usable.
        expr = f"(embedding::vector({dim})) <=> CAST(:q AS vector({dim}))"
        sql = (
            f"SELECT id, 1 - ({expr}) AS s FROM memory_chunks "
            f"WHERE embedding_dim = {dim} AND agent_id = :a AND user_id = ANY(:users) "
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

        if conn is not None:
            result = _query(conn)
        else:
            with self.engine.db.engine.connect() as own, own.begin():
                result = _query(own)
        hits = [(int(i), float(s)) for i, s in result]
        hits.sort(key=lambda h: -h[1])  # relaxed_order may return slightly out of order
        return hits


def _hnsw_name(dim: int) -> str:
    return f"ix_memory_chunks_hnsw_{int(dim)}"


def make_sqlite_backend(engine: Engine) -> SQLiteSearchBackend:
    return SQLiteSearchBackend(engine)


def make_postgres_backend(engine: Engine) -> PostgresSearchBackend:
    if engine.db.backend != "postgresql":
        from goclaw.errors import ConfigError

        raise ConfigError("memory backend 'postgresql' needs a PostgreSQL database_url")
    return PostgresSearchBackend(engine)
