"""Knowledge-graph facts as a ``memory_search`` tier (``tier="kg"``), and their expansion.

Through the memory plugin's hooks (``goclaw_memory_search_extra``, ``goclaw_memory_expand``),
never its code. A fact is a current entity of the search's scope ("Ada (person): lead
engineer") or a current relation ("Ada works at Acme"); its score is the share of the query's
distinct terms it holds (:func:`goclaw_search.answer.coverage`, 0..1 as the other tiers), and
every current fact of the scope is scored; ties go to entities, then to the newest. A hit's id
is ``kg:e:<entity id>`` or ``kg:r:<relation id>``; ``memory_get`` expands it to the entity with
its current relations, or to the relation with both ends. A hit is dated by its ``valid_from``
(``extra["date"]``).

Every ``memory_search`` asks this tier, so what it pays when nothing changed matters most:

* **Index**: per agent, a :class:`~goclaw_search.index.SearchIndex` of its current facts (their
  terms, user scope) with what a hit shows (text, name, ``valid_from``), on both backends; the
  scope and a ``since`` / ``until`` range filter inside it, before the cut to ``limit``.
* **The change token**: the agent's counter in ``kg_versions``, which triggers move on every
  change a search can see, whoever writes (migration ``kg_0002``), renames of a relation's
  endpoints included. A search reads that one row; on SQLite not even that while ``PRAGMA
  data_version`` says no other connection committed since the last look. No counter: the agent
  has no fact, and the search reads nothing else.
* When the token moves, the agent's current facts are read (two statements) and the index is
  reconciled: a fact whose text, scope or date changed is replaced, one that went is dropped;
  only those are tokenised again.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import text
from sqlmodel import col, select

from goclaw.contracts.agents import user_scope
from goclaw.contracts.hooks import SearchHit
from goclaw.contracts.records import entity_dict, relation_dict
from goclaw.errors import NotFoundError, StoreError
from goclaw_kg.tables import KGEntity, KGRelation
from goclaw_search.answer import coverage
from goclaw_search.commit_watch import CommitWatch
from goclaw_search.index import Doc, SearchIndex
from goclaw_search.per_owner import PerOwner
from goclaw_search.pg_reads import shared
from goclaw_search.tokenize import query_terms, terms

TIER = "kg"
_SEARCHERS: PerOwner[FactSearch] = PerOwner()

_TOKEN = "SELECT version FROM kg_versions WHERE agent_id = :a"
_PG_TOKEN = _TOKEN.replace(":a", "%s")  # psycopg's placeholders
# The current facts of an agent, every user scope: (id, user, name or source, type, description
# or target, valid_from). A relation's ends are named afterwards, by their entities' names (a
# join costs more than naming them from the entities just read).
_ENTITIES = (
    "SELECT id, user_id, name, entity_type, description, valid_from FROM kg_entities "
    "WHERE agent_id = :a AND valid_until IS NULL"
)
_RELATIONS = (
    "SELECT id, user_id, source_entity_id, relation_type, target_entity_id, valid_from "
    "FROM kg_relations WHERE agent_id = :a AND valid_until IS NULL"
)


def searcher(engine: Any) -> FactSearch:
    """The engine's fact searcher (one per engine: its indexes outlive a search)."""
    return _SEARCHERS.get(engine, FactSearch)


def fact_hits(
    engine: Any,
    query: str,
    agent: Any,
    user: str | None,
    limit: int,
    since: str | None = None,
    until: str | None = None,
) -> list[SearchHit]:
    """The best ``limit`` facts of the scope for ``query``, best first (scores above 0);
    ``since`` / ``until`` (ISO days, inclusive): only facts valid from a day within them."""
    if limit < 1 or not query_terms(query):
        return []
    return searcher(engine).hits(agent.id, query, user_scope(user), limit, since, until)


@dataclass(frozen=True)
class _Fact:
    """What a hit shows of a fact, kept in the index's state: a search reads no row."""

    kind: str  # "e" | "r"
    id: str
    user_id: str
    text: str
    name: str
    since: datetime | None

    def hit(self, score: float) -> SearchHit:
        return SearchHit(
            id=f"kg:{self.kind}:{self.id}",
            score=score,
            text=self.text,
            path=f"kg:{self.name}",
            scope="user" if self.user_id else "agent",
            tier=TIER,
            extra={
                "kind": "entity" if self.kind == "e" else "relation",
                "date": self.since.isoformat() if self.since else None,
            },
        )


@dataclass
class _State:
    """An agent's index. Index keys are numbered here as facts first appear (never reused), so
    what is known per key lives in arrays a search indexes with the slots' keys."""

    index: SearchIndex = field(default_factory=lambda: SearchIndex(0))
    token: Any = None
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)  # "e" / "r" -> id -> row read
    keys: dict[tuple[str, str], int] = field(default_factory=dict)  # (kind, fact id) -> index key
    facts: list[_Fact | None] = field(default_factory=list)  # by key: what a hit shows
    when: Any = field(default_factory=lambda: np.zeros(0))  # by key: valid_from, POSIX seconds
    entity: Any = field(default_factory=lambda: np.zeros(0, dtype=np.bool_))  # by key
    rank: Any = None  # per slot, made by the first search after a reconcile: see _rank
    lock: threading.Lock = field(default_factory=threading.Lock)


def _when(value: Any) -> datetime | None:
    """A ``valid_from`` as an aware UTC datetime (SQLite gives its stored text)."""
    if value is None or value == "":
        return None
    when = datetime.fromisoformat(value) if isinstance(value, str) else value
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _day_start(day: str) -> float:
    """POSIX seconds of an ISO day's (or time's) start, UTC unless it says otherwise."""
    moment = datetime.fromisoformat(day)
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


class FactSearch:
    """Fact search for one engine (see the module docstring)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self._states: dict[str, _State] = {}
        self._lock = threading.Lock()
        self.reconciles = 0  # tests read it: how often an index was brought up to date
        path = engine.db.engine.url.database if engine.db.backend == "sqlite" else None
        self._watch = CommitWatch(path, lambda conn: engine.on_close(conn.close))
        self._reads = shared(engine.db.engine, StoreError) if engine.db.backend == "postgresql" else None
        if self._reads is not None:
            engine.on_close(self._reads.close)

    def hits(
        self, agent_id: str, query: str, scope: list[str], limit: int, since: str | None, until: str | None
    ) -> list[SearchHit]:
        token = self._token(agent_id)
        if token is None:
            with self._lock:
                self._states.pop(agent_id, None)
            return []
        with self._lock:
            st = self._states.get(agent_id)
            if st is None:
                st = self._states[agent_id] = _State()
        with st.lock:
            if st.token != token:
                self._reconcile(agent_id, st)
                st.token = token
            idx = st.index
            if not idx.n_alive:
                return []
            if st.rank is None:
                st.rank = self._rank(st)
            wanted = list(dict.fromkeys(query_terms(query)))
            lexical = coverage([idx.bm25([t]) > 0 for t in wanted])  # dead slots hold no term
            if lexical is None:
                return []
            keep = (lexical > 0) & idx.scope_mask(scope)  # the scope's live slots
            if since or until:
                when = st.when[idx.ids[: idx.n]]
                if since:
                    keep &= when >= _day_start(since)
                if until:
                    keep &= when < _day_start(until) + timedelta(days=1).total_seconds()
            slots = np.flatnonzero(keep)
            best = slots[np.lexsort((st.rank[slots], -lexical[slots]))[:limit]].tolist()
            found = [(st.facts[int(idx.ids[s])], min(1.0, float(lexical[s]))) for s in best]
            return [fact.hit(score) for fact, score in found if fact]  # a live slot's fact: never None

    # ------------------------------------------------------------------ keeping in step
    def _token(self, agent_id: str) -> int | None:
        """The agent's change counter, ``None`` when it has no fact."""
        if self._reads is not None:
            rows = self._reads.query(_PG_TOKEN, (agent_id,))
            return int(rows[0][0]) if rows else None
        conn = self._watch.connection()
        if conn is None:  # SQLite in memory or by URI
            with self.engine.db.engine.connect() as c:
                return c.execute(text(_TOKEN), {"a": agent_id}).scalar()
        known, token = self._watch.remembered(agent_id)
        if known:
            return token  # nobody committed since the last look
        row = conn.execute(_TOKEN.replace(":a", "?"), (agent_id,)).fetchone()
        found = None if row is None else int(row[0])
        self._watch.remember(agent_id, found)
        return found

    def _reconcile(self, agent_id: str, st: _State) -> None:
        """Bring the agent's index to its current facts: drop what went or changed, add what
        is new or changed (the token was read before these rows: a change in between moves it
        again, and the next search reconciles once more)."""
        with self.engine.db.engine.connect() as c:
            # The driver's plain tuples: compared as they are with the rows read last time.
            ents = {e[0]: e for e in c.execute(text(_ENTITIES), {"a": agent_id}).cursor.fetchall()}
            rels = {r[0]: r for r in c.execute(text(_RELATIONS), {"a": agent_id}).cursor.fetchall()}
            foreign = {x for r in rels.values() for x in (r[2], r[4]) if x not in ents}
            names = {}
            if foreign:  # an end that is no current entity of the agent (none that goclaw writes)
                found = c.execute(select(KGEntity.id, KGEntity.name).where(col(KGEntity.id).in_(foreign)))
                names = {i: n for i, n in found}
        old_e, old_r = st.rows.get("e", {}), st.rows.get("r", {})
        changed = [("e", i) for i, e in ents.items() if old_e.get(i) != e]
        renamed = {i for _k, i in changed if i in old_e and old_e[i][2] != ents[i][2]}
        changed += [
            ("r", i)
            for i, r in rels.items()
            if old_r.get(i) != r or (renamed and {r[2], r[4]} & renamed) or r[2] in foreign or r[4] in foreign
        ]
        gone = [("e", i) for i in old_e if i not in ents] + [("r", i) for i in old_r if i not in rels]
        idx = st.index
        idx.remove([st.keys[f] for f in changed if f in st.keys] + [st.keys[f] for f in gone])
        for f in gone:
            st.facts[st.keys.pop(f)] = None
        docs, made = [], []
        for kind, i in changed:
            if kind == "e":
                _i, user, name, kind_of, desc, since = ents[i]
                said = f"{name} ({kind_of})" + (f": {desc}" if desc else "")
            else:
                _i, user, src, kind_of, dst, since = rels[i]
                name = ents[src][2] if src in ents else names.get(src, src)
                end = ents[dst][2] if dst in ents else names.get(dst, dst)
                said = f"{name} {kind_of.replace('_', ' ')} {end}"
            key = st.keys.get((kind, i))
            if key is None:
                key = st.keys[kind, i] = len(st.facts)
                st.facts.append(None)
            fact = st.facts[key] = _Fact(kind, str(i), user or "", said, str(name), _when(since))
            made.append((key, fact))
            docs.append(Doc(key, user or "", terms(said)))
        if len(st.when) < len(st.facts):
            grow = max(len(st.facts), 2 * len(st.when))
            st.when = np.resize(st.when, grow)
            st.entity = np.resize(st.entity, grow)
        for key, fact in made:
            st.when[key] = fact.since.timestamp() if fact.since else np.nan
            st.entity[key] = fact.kind == "e"
        idx.upsert(docs)
        st.rows, st.rank = {"e": ents, "r": rels}, None
        self.reconciles += 1

    @staticmethod
    def _rank(st: _State) -> Any:
        """Per slot, the rank a tie is broken by: entities first, then the newest."""
        keys = st.index.ids[: st.index.n]
        when = np.nan_to_num(st.when[keys], nan=-np.inf)
        order = np.lexsort((-when, ~st.entity[keys]))
        rank = np.empty(len(keys), dtype=np.int64)
        rank[order] = np.arange(len(keys))
        return rank


def expand(engine: Any, hit_id: str, agent: Any, user: str | None) -> dict[str, Any] | None:
    """What a ``kg:`` id names, within the caller's scope; ``None`` for any other id."""
    kind, _, row_id = hit_id.partition(":")[2].partition(":")
    if not hit_id.startswith("kg:") or kind not in ("e", "r") or not row_id:
        return None
    scope = user_scope(user)
    with engine.db.session() as s:
        row = s.get(KGEntity if kind == "e" else KGRelation, row_id)
        if row is None or row.agent_id != agent.id or row.user_id not in scope:
            raise NotFoundError(f"no knowledge-graph fact {hit_id!r} for this agent/user")
        if kind == "r":
            ends = s.exec(
                select(KGEntity.id, KGEntity.name).where(
                    col(KGEntity.id).in_([row.source_entity_id, row.target_entity_id])
                )
            ).all()
            return {"relation": relation_dict(row, dict(ends))}
        links = s.exec(
            select(KGRelation).where(
                (KGRelation.source_entity_id == row.id) | (KGRelation.target_entity_id == row.id),
                col(KGRelation.valid_until).is_(None),
                col(KGRelation.user_id).in_(scope),
            )
        ).all()
        ids = {x for rel in links for x in (rel.source_entity_id, rel.target_entity_id)}
        names = dict(s.exec(select(KGEntity.id, KGEntity.name).where(col(KGEntity.id).in_(ids))).all())
        return {"entity": entity_dict(row), "relations": [relation_dict(rel, names) for rel in links]}
