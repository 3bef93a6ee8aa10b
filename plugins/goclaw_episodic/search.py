"""Episodic search on the shared retrieval engine (issue 11: one engine; "the episodic tier
costs nothing when empty and little when full").

Every ``memory_search`` asks this tier too, so its fixed cost matters more than its peak:

* **Gate**: one raw read per search says whether the agent (of this engine's tenant) has any
  summary. On SQLite even that read is skipped while ``PRAGMA data_version`` says no other
  connection committed since the last look. An agent without summaries costs a few
  microseconds and never embeds the query.
* **SQLite**: per agent, a :class:`~goclaw.retrieval.index.SearchIndex` over its unexpired
  summaries (BM25 over the stored ``lex`` terms, the vectors of the current embedding space),
  kept in sync like the memory index: a change token (row count, rowid sum, newest
  ``created_at``, earliest ``expires_at``) and per-row fingerprints; the index is reconciled
  only when the token moves or the earliest expiry passes. Every summary is scored on both
  channels.
* **PostgreSQL** (:mod:`goclaw_episodic.search_pg`): full text stays in the database
  (``tsv`` generated from ``lex``, GIN). After the gate, one statement finds the best
  candidates of either channel among the caller's summaries (full-text matches ranked by how
  many query terms they hold; nearest by cosine) and reads each candidate's terms and real
  cosine.

The score is absolute (:mod:`goclaw.retrieval.answer`): 0.7 × the share of the query's terms a
summary holds + 0.3 × its cosine, the reference's episodic weights; a channel with no hit
leaves the other at weight 1.0.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import weakref
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from goclaw.retrieval.answer import coverage, fuse_absolute
from goclaw.retrieval.index import Doc, SearchIndex
from goclaw.retrieval.tokenize import query_terms
from goclaw.store.types import utcnow
from goclaw_episodic.search_pg import search_pg
from goclaw_episodic.terms import Space, episode_lex, topics

log = logging.getLogger("goclaw.episodic")

__all__ = ["EpisodicSearch", "episode_lex", "searcher"]

LOOKUP = 500
_SEARCHERS: weakref.WeakKeyDictionary[Any, EpisodicSearch] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def searcher(engine: Any) -> EpisodicSearch:
    """The engine's episodic searcher (one per engine: its indexes outlive a store object)."""
    with _LOCK:
        found = _SEARCHERS.get(engine)
        if found is None:
            found = _SEARCHERS[engine] = EpisodicSearch(engine)
            engine.on_close(lambda: _SEARCHERS.pop(engine, None))  # the searcher holds the engine
        return found


def _sqlite_time(value: Any) -> str:
    """A datetime as SQLite stores ``UTCDateTime`` (naive UTC text, lexical order = time)."""
    return str(value.replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds"))


def _fingerprint(episode_id: str) -> int:
    return zlib.crc32(episode_id.encode("utf-8"))


@dataclass(frozen=True)
class _HitRow:
    """The columns of an episodic summary that a ``memory_search`` hit shows."""

    id: str
    user_id: str
    session_key: str
    source_id: str
    source_type: str
    l0_abstract: str
    summary: str
    key_topics: list[str]
    created_at: datetime | None


@dataclass
class _State:
    index: SearchIndex
    space: Space | None
    token: Any = None
    next_expiry: str | None = None  # the earliest expires_at in the index (SQLite text)
    ids: dict[int, str] = field(default_factory=dict)  # rowid -> episodic id
    lock: threading.Lock = field(default_factory=threading.Lock)


class EpisodicSearch:
    """Hybrid episodic search for one engine (see the module docstring)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.tenant = str(engine.settings.tenant_id)
        self._states: dict[tuple[str, Space | None], _State] = {}
        self._local = threading.local()
        self._lock = threading.Lock()
        self.reconciles = 0  # tests read it: how often an index was brought up to date
        self.vector_indexes: set[int] = set()  # PostgreSQL: dimensions whose HNSW index exists
        url = engine.db.engine.url
        path = url.database if engine.db.backend == "sqlite" else None
        self._db_path = path if path and path != ":memory:" and not path.startswith("file:") else None

    # ------------------------------------------------------------------ entry point
    def search(
        self,
        agent_id: str,
        scope: list[str],
        query: str,
        *,
        limit: int,
        min_score: float = 0.0,
        vector_query: str | None = None,
    ) -> list[tuple[str, float]]:
        """``[(episodic id, score)]`` best first, at most ``limit``, each ≥ ``min_score``."""
        if self.engine.db.backend == "postgresql":
            found = self._search_pg(agent_id, scope, query, limit, vector_query)
        else:
            found = self._search_sqlite(agent_id, scope, query, limit, vector_query)
        return [(i, s) for i, s in found if s >= min_score and s > 0]

    def _query_vector(self, query: str, vector_query: str | None) -> tuple[Any, Space | None]:
        from goclaw.retrieval.embed import embed_texts

        emb = embed_texts(self.engine, [vector_query or query]) if query.strip() else None
        if emb is None:
            return None, None
        return emb.vectors[0], (emb.provider, emb.model, int(emb.dim))

    # ------------------------------------------------------------------ SQLite
    def _conn(self) -> sqlite3.Connection | None:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None and self._db_path is not None:
            conn = sqlite3.connect(self._db_path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout=5000")
            conn.execute("PRAGMA query_only=1")
            self._local.conn = conn
            self._local.version = None
            self._local.tokens = {}
            self.engine.on_close(conn.close)
        return conn

    def _rows(self, sql: str, params: Sequence[Any]) -> list[Any]:
        conn = self._conn()
        if conn is not None:
            return conn.execute(sql, params).fetchall()
        with self.engine.db.engine.connect() as c:
            return list(c.exec_driver_sql(sql, tuple(params)).all())

    def _token(self, agent_id: str) -> Any:
        """The agent's change token, ``None`` when it has no summary or is another tenant's."""
        conn = self._conn()
        local = self._local
        if conn is not None:
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            if version == local.version and agent_id in local.tokens:
                return local.tokens[agent_id]  # nobody committed since the last look
            if version != local.version:
                local.version, local.tokens = version, {}
        tenant, count, total, newest, expiry = self._rows(
            "SELECT (SELECT tenant_id FROM agents WHERE id = ?), count(*), total(rowid), max(created_at), "
            "min(expires_at) FROM episodic_summaries WHERE agent_id = ?",
            (agent_id, agent_id),
        )[0]
        token = (
            (int(count), float(total), str(newest), str(expiry)) if tenant == self.tenant and count else None
        )
        if conn is not None:
            local.tokens[agent_id] = token
        return token

    def hit_rows(self, ids: list[str]) -> dict[str, Any] | None:
        """SQLite: the columns a search hit shows, by id, read raw on the private connection
        (types as the ORM gives them); ``None`` elsewhere (the caller reads them itself)."""
        conn = self._conn() if self.engine.db.backend == "sqlite" else None
        if conn is None:
            return None
        marks = ",".join("?" * len(ids))
        out: dict[str, Any] = {}
        for r in conn.execute(
            "SELECT id, user_id, session_key, source_id, source_type, l0_abstract, summary, key_topics, "
            f"created_at FROM episodic_summaries WHERE id IN ({marks})",
            ids,
        ):
            created = datetime.fromisoformat(r[8]).replace(tzinfo=UTC) if r[8] else None
            out[r[0]] = _HitRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], topics(r[7]), created)
        return out

    def _search_sqlite(
        self, agent_id: str, scope: list[str], query: str, limit: int, vector_query: str | None
    ) -> list[tuple[str, float]]:
        token = self._token(agent_id)
        if token is None:
            return []
        qvec, space = self._query_vector(query, vector_query)
        with self._lock:  # one index per embedding space: a flapping embedder rebuilds nothing
            st = self._states.get((agent_id, space))
            if st is None:
                st = self._states[(agent_id, space)] = _State(SearchIndex(space[2] if space else 0), space)
        with st.lock:
            now = _sqlite_time(utcnow())
            if st.token != token or (st.next_expiry is not None and now >= st.next_expiry):
                self._reconcile(agent_id, st, now)
                st.token = token
            idx = st.index
            if not idx.n_alive:
                return []
            mask = idx.scope_mask(scope)
            terms = list(dict.fromkeys(query_terms(query)))
            lexical = coverage([idx.bm25([t]) > 0 for t in terms])  # dead slots score 0
            vector = idx.cosine(qvec) if qvec is not None and idx.has_vec[: idx.n].any() else None
            scored = fuse_absolute(lexical, vector, mask, limit)
            return [(st.ids[int(idx.ids[slot])], score) for slot, score in scored]

    def _reconcile(self, agent_id: str, st: _State, now: str) -> None:
        """Bring the agent's index to its unexpired rows: drop what went, add what is new."""
        idx = st.index
        rows = self._rows(
            "SELECT rowid, id, expires_at FROM episodic_summaries WHERE agent_id = ? "
            "AND (expires_at IS NULL OR expires_at > ?)",
            (agent_id, now),
        )
        want = {int(r[0]): _fingerprint(str(r[1])) for r in rows}
        expiries = [str(r[2]) for r in rows if r[2] is not None]
        st.next_expiry = min(expiries) if expiries else None
        stale = [i for i, slot in idx.slot_of.items() if want.get(i) != int(idx.fp[slot])]
        idx.remove(stale)
        for i in stale:
            st.ids.pop(i, None)
        missing = [i for i in want if i not in idx.slot_of]
        provider, model, dim = st.space or ("", "", 0)
        docs: list[Doc] = []
        for start in range(0, len(missing), LOOKUP):
            part = missing[start : start + LOOKUP]
            marks = ",".join("?" * len(part))
            for rowid, eid, user, lex, summary, l0, key_topics, emb, ok in self._rows(
                "SELECT rowid, id, user_id, lex, summary, l0_abstract, key_topics, embedding, "
                "(embedding_provider = ? AND embedding_model = ? AND embedding_dim = ?) "
                f"FROM episodic_summaries WHERE rowid IN ({marks})",
                (provider, model, dim, *part),
            ):
                if lex is None:  # written by an older build: tokenise now
                    lex = episode_lex(summary, l0, topics(key_topics))
                vec = np.frombuffer(emb, dtype=np.float32) if emb is not None and ok and dim else None
                docs.append(Doc(int(rowid), user or "", lex.split(), vec, _fingerprint(str(eid))))
                st.ids[int(rowid)] = str(eid)
        idx.upsert(docs)
        self.reconciles += 1

    def _search_pg(
        self, agent_id: str, scope: list[str], query: str, limit: int, vector_query: str | None
    ) -> list[tuple[str, float]]:
        return search_pg(self, agent_id, scope, query, limit, vector_query)
