"""Episodic search on the shared retrieval library (:mod:`goclaw_search`): the episodic tier
costs nothing when empty and little when full.

Every ``memory_search`` asks this tier too, so its fixed cost matters more than its peak:

* **Gate**: one raw read per search says whether the agent (of this engine's tenant) has any
  summary. On SQLite even that read is skipped while ``PRAGMA data_version`` says no other
  connection committed since the last look; on PostgreSQL it is one autocommit round trip
  outside the store's pool (:mod:`goclaw_search.pg_reads`). An agent without summaries costs a few
  microseconds and never embeds the query.
* **Index**: per agent, a :class:`~goclaw_search.index.SearchIndex` over its unexpired
  summaries (postings of the stored ``lex`` terms, the vectors of the current embedding space),
  on both backends, kept in step like the memory index: a change token and per-row
  fingerprints; the index is reconciled only when the token moves or the earliest expiry
  passes. Every summary is scored on both channels.
* **The change token**: the agent's counter in ``episodic_versions``, which triggers move on
  every change a search can see, whoever writes (migration ``episodic_0002``): one indexed read
  instead of a pass over the agent's rows. Searching in PostgreSQL itself (``tsv`` + GIN, HNSW)
  costs 7-15 ms at 1,000 summaries and 30 ms at 2,000, as the terms held have to be counted
  over every full-text match (docs/consolidation.md has the figures).

The score is absolute (:mod:`goclaw_search.answer`): 0.7 × the share of the query's terms a
summary holds + 0.3 × its cosine; a channel with no hit
leaves the other at weight 1.0.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import text

from goclaw.contracts.columns import utcnow
from goclaw.errors import StoreError
from goclaw_episodic.terms import Space, episode_lex, topics
from goclaw_search.answer import coverage, fuse_absolute
from goclaw_search.commit_watch import CommitWatch
from goclaw_search.index import Doc, SearchIndex
from goclaw_search.per_owner import PerOwner
from goclaw_search.pg_reads import shared
from goclaw_search.tokenize import query_terms
from goclaw_text.sentences import clip

log = logging.getLogger("goclaw.episodic")

__all__ = ["EpisodicSearch", "episode_lex", "searcher"]

LOOKUP = 500
_SEARCHERS: PerOwner[EpisodicSearch] = PerOwner()


def searcher(engine: Any) -> EpisodicSearch:
    """The engine's episodic searcher (one per engine: its indexes outlive a store object)."""
    return _SEARCHERS.get(engine, EpisodicSearch)


def _sqlite_time(value: Any) -> str:
    """A datetime as SQLite stores ``UTCDateTime`` (naive UTC text, lexical order = time)."""
    return str(value.replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds"))


def _fingerprint(episode_id: str) -> int:
    return zlib.crc32(episode_id.encode("utf-8"))


def _within(idx: Any, rows: dict[int, _HitRow], days: tuple[str | None, str | None]) -> Any:
    """Which slots of ``idx`` hold a summary created within ``days`` (first, last ISO day)."""
    lo, hi = days[0] or "0000", days[1] or "9999-99-99"
    ok = np.zeros(idx.n, dtype=np.bool_)
    for slot in np.flatnonzero(idx.alive[: idx.n]).tolist():
        row = rows.get(int(idx.ids[slot]))
        created = row.created_at if row is not None else None
        ok[slot] = created is not None and lo <= created.date().isoformat() <= hi
    return ok


@dataclass(frozen=True)
class _HitRow:
    """What a ``memory_search`` hit shows of an episodic summary, kept in the index's state
    (read with its terms and vector, so a search reads no row afterwards); ``text`` is the L0
    abstract, else the summary's first 500 characters."""

    id: str
    user_id: str
    session_key: str
    source_id: str
    source_type: str
    text: str
    key_topics: list[str]
    created_at: datetime | None


@dataclass
class _State:
    index: SearchIndex
    space: Space | None
    token: Any = None
    next_expiry: Any = None  # the earliest expires_at in the index (SQLite: its stored text)
    rows: dict[int, _HitRow] = field(default_factory=dict)  # index key -> what a hit shows
    lock: threading.Lock = field(default_factory=threading.Lock)


def _vector(value: Any) -> Any:
    """A stored embedding as float32: bytes on SQLite, pgvector's type on PostgreSQL."""
    if isinstance(value, bytes | bytearray | memoryview):
        return np.frombuffer(value, dtype=np.float32)
    to_numpy = getattr(value, "to_numpy", None)  # pgvector.Vector
    return np.asarray(to_numpy() if to_numpy is not None else value, dtype=np.float32)


def _key(episode_id: str) -> int:
    """PostgreSQL: an index key for a summary id (63 bits of its hash; SQLite uses the rowid)."""
    return int.from_bytes(hashlib.blake2b(episode_id.encode("utf-8"), digest_size=8).digest(), "big") >> 1


# The columns an index is built from, after the key: id, scope, terms, vector, then what a hit shows.
_DOC_COLUMNS = (
    "id, user_id, lex, summary, l0_abstract, key_topics, embedding, session_key, source_id, "
    "source_type, created_at"
)


def _when(value: Any) -> datetime | None:
    """A ``created_at`` as an aware UTC datetime (SQLite gives its stored text)."""
    if value is None or value == "":
        return None
    when = datetime.fromisoformat(value) if isinstance(value, str) else value
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


_TOKEN = (
    "SELECT (SELECT tenant_id FROM agents WHERE id = :a), "
    "EXISTS (SELECT 1 FROM episodic_summaries WHERE agent_id = :a), "
    "(SELECT version FROM episodic_versions WHERE agent_id = :a)"
)
_PG_TOKEN = _TOKEN.replace(":a", "%(a)s")  # psycopg's placeholders


class _Rows:
    """Reads the rows an agent's index is built from (one subclass per backend)."""

    def __init__(self, search: EpisodicSearch) -> None:
        self.search = search

    def _rows(self, sql: str, params: Any) -> list[Any]:
        raise NotImplementedError

    def _token_row(self, agent_id: str) -> Any:
        return self._rows(_TOKEN, {"a": agent_id})[0]

    def token(self, agent_id: str) -> tuple[Any, ...]:
        """``(tenant, has a summary, change counter)``; the counter is -1 while the agent's
        rows are all older than migration episodic_0002 (their first build reads them)."""
        tenant, has, version = self._token_row(agent_id)
        return (tenant, bool(has), -1 if version is None else int(version))


class _SQLiteRows(_Rows):
    """The rows an index is built from, on SQLite: keyed by rowid (its fingerprint is the id's:
    a row rewritten in place by another writer moves the counter but is not read again, which
    nothing in goclaw does), times as stored text."""

    def _rows(self, sql: str, params: Any) -> list[Any]:
        conn = self.search.watch.connection()
        if conn is not None:
            return conn.execute(sql, params).fetchall()
        with self.search.engine.db.engine.connect() as c:
            return list(c.exec_driver_sql(sql, params if isinstance(params, dict) else tuple(params)).all())

    def now(self) -> Any:
        return _sqlite_time(utcnow())

    def live(self, agent_id: str, now: Any) -> list[tuple[int, int, Any, Any]]:
        """``(key, fingerprint, expires_at, what docs() reads it by)`` per unexpired row."""
        rows = self._rows(
            "SELECT rowid, id, expires_at FROM episodic_summaries WHERE agent_id = ? "
            "AND (expires_at IS NULL OR expires_at > ?)",
            (agent_id, now),
        )
        return [
            (int(r[0]), _fingerprint(str(r[1])), None if r[2] is None else str(r[2]), int(r[0])) for r in rows
        ]

    def docs(self, keys: list[Any], space: Space) -> list[Any]:
        """``(key, *_DOC_COLUMNS, in space)`` per row."""
        return self._rows(
            f"SELECT rowid, {_DOC_COLUMNS}, "
            "(embedding_provider = ? AND embedding_model = ? AND embedding_dim = ?) "
            f"FROM episodic_summaries WHERE rowid IN ({','.join('?' * len(keys))})",
            (*space, *keys),
        )


class _PgRows(_Rows):
    """The same on PostgreSQL: keyed by a hash of the id; a row's fingerprint covers its
    ``xmin``, so a row rewritten in place is read again. The token, read by every search, goes
    through an autocommit connection outside the store's pool; the rows, read when it moved,
    through the pool (whose connections know pgvector's type)."""

    def __init__(self, search: EpisodicSearch) -> None:
        super().__init__(search)
        engine = search.engine
        self.reads = shared(engine.db.engine, StoreError)
        engine.on_close(self.reads.close)

    def _rows(self, sql: str, params: Any) -> list[Any]:
        with self.search.engine.db.engine.connect() as c:
            return list(c.execute(text(sql), params).all())

    def _token_row(self, agent_id: str) -> Any:
        return self.reads.query(_PG_TOKEN, {"a": agent_id})[0]

    def now(self) -> Any:
        return utcnow()

    def live(self, agent_id: str, now: Any) -> list[tuple[int, int, Any, Any]]:
        rows = self._rows(
            "SELECT id, xmin::text, expires_at FROM episodic_summaries WHERE agent_id = :a "
            "AND (expires_at IS NULL OR expires_at > :now)",
            {"a": agent_id, "now": now},
        )
        return [(_key(str(i)), _fingerprint(f"{i}:{xmin}"), expiry, str(i)) for i, xmin, expiry in rows]

    def docs(self, ids: list[Any], space: Space) -> list[Any]:
        rows = self._rows(
            f"SELECT {_DOC_COLUMNS}, "
            "(embedding_provider = :p AND embedding_model = :m AND embedding_dim = :d) "
            "FROM episodic_summaries WHERE id = ANY(:ids)",
            {"p": space[0], "m": space[1], "d": space[2], "ids": ids},
        )
        return [(_key(str(r[0])), *r) for r in rows]


class EpisodicSearch:
    """Hybrid episodic search for one engine (see the module docstring)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.tenant = str(engine.settings.tenant_id)
        self._states: dict[tuple[str, Space | None], _State] = {}
        self._lock = threading.Lock()
        self.reconciles = 0  # tests read it: how often an index was brought up to date
        path = engine.db.engine.url.database if engine.db.backend == "sqlite" else None
        self.watch = CommitWatch(path, lambda conn: engine.on_close(conn.close))
        self._rows_of: _SQLiteRows | _PgRows = (
            _PgRows(self) if engine.db.backend == "postgresql" else _SQLiteRows(self)
        )

    # ------------------------------------------------------------------ entry point
    def search_rows(
        self,
        agent_id: str,
        scope: list[str],
        query: str,
        *,
        limit: int,
        min_score: float = 0.0,
        vector_query: str | None = None,
        query_vector: Any = None,
        days: tuple[str | None, str | None] | None = None,
    ) -> list[tuple[_HitRow, float]]:
        """``[(what the hit shows, score)]`` best first, at most ``limit``, each ≥ ``min_score``
        (``row.id`` is the summary's id). ``query_vector``: the query's embedding by the
        configured embedder, when the caller made one (a memory search): not embedded again.
        ``days``: only summaries created from the first to the last ISO day, both inclusive
        (``None`` for either: open; an undated summary is outside every range)."""
        token = self._token(agent_id)
        if token is None:
            return []
        given = (
            self._given_vector(query_vector) if query_vector is not None and vector_query is None else None
        )
        qvec, space = given or self._query_vector(query, vector_query)
        with self._lock:  # one index per embedding space: a flapping embedder rebuilds nothing
            st = self._states.get((agent_id, space))
            if st is None:
                st = self._states[(agent_id, space)] = _State(SearchIndex(space[2] if space else 0), space)
        with st.lock:
            now = self._rows_of.now()
            if st.token != token or (st.next_expiry is not None and now >= st.next_expiry):
                self._reconcile(agent_id, st, now)
                st.token = token
            idx = st.index
            if not idx.n_alive:
                return []
            mask = idx.scope_mask(scope)
            if days is not None and mask is not None:
                mask = mask & _within(idx, st.rows, days)
            terms = list(dict.fromkeys(query_terms(query)))
            lexical = coverage([idx.bm25([t]) > 0 for t in terms])  # dead slots score 0
            vector = idx.cosine(qvec) if qvec is not None and idx.has_vec[: idx.n].any() else None
            found = fuse_absolute(lexical, vector, mask, limit)
            return [(st.rows[int(idx.ids[slot])], s) for slot, s in found if s >= min_score]

    def _given_vector(self, vector: Any) -> tuple[Any, Space] | None:
        """A query vector the configured embedder made, normalised as stored vectors are
        (:func:`goclaw.contracts.providers.embed_texts`), with that embedder's space."""
        try:
            provider = self.engine.embedder()
        except Exception:  # the caller's search already said why
            return None
        if provider is None:
            return None
        vectors = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        vectors = vectors / norms
        return vectors[0], (str(provider.provider), str(provider.model), int(vectors.shape[1]))

    def _query_vector(self, query: str, vector_query: str | None) -> tuple[Any, Space | None]:
        from goclaw.contracts.providers import embed_texts

        emb = embed_texts(self.engine, [vector_query or query]) if query.strip() else None
        if emb is None:
            return None, None
        return emb.vectors[0], (emb.provider, emb.model, int(emb.dim))

    # ------------------------------------------------------------------ keeping in step
    def _token(self, agent_id: str) -> Any:
        """The agent's change token, ``None`` when it has no summary or is another tenant's."""
        known, found = self.watch.remembered(agent_id)
        if known:
            return found  # nobody committed since the last look
        tenant, *token = self._rows_of.token(agent_id)
        found = tuple(token) if tenant == self.tenant and token[0] else None
        self.watch.remember(agent_id, found)
        return found

    def _reconcile(self, agent_id: str, st: _State, now: Any) -> None:
        """Bring the agent's index to its unexpired rows: drop what went, add what is new."""
        idx = st.index
        rows = self._rows_of.live(agent_id, now)
        want = {key: fp for key, fp, _expiry, _ref in rows}
        refs = {key: ref for key, _fp, _expiry, ref in rows}
        expiries = [expiry for _key, _fp, expiry, _ref in rows if expiry is not None]
        st.next_expiry = min(expiries) if expiries else None
        stale = [i for i, slot in idx.slot_of.items() if want.get(i) != int(idx.fp[slot])]
        idx.remove(stale)
        for i in stale:
            st.rows.pop(i, None)
        missing = [i for i in want if i not in idx.slot_of]
        provider, model, dim = st.space or ("", "", 0)
        docs: list[Doc] = []
        for start in range(0, len(missing), LOOKUP):
            for r in self._rows_of.docs(
                [refs[k] for k in missing[start : start + LOOKUP]], (provider, model, dim)
            ):
                key, eid, user, lex, summary, l0, key_topics, emb, session, source, kind, created, ok = r
                listed = topics(key_topics)
                if lex is None:  # written by an older build: tokenise now
                    lex = episode_lex(summary, l0, listed)
                vec = _vector(emb) if emb is not None and ok and dim else None
                docs.append(Doc(key, user or "", lex.split(), vec, want[key]))
                text = l0 or clip(summary or "", 500)
                st.rows[key] = _HitRow(
                    str(eid),
                    user or "",
                    session or "",
                    source or "",
                    kind or "",
                    text,
                    listed,
                    _when(created),
                )
        idx.upsert(docs)
        self.reconciles += 1
