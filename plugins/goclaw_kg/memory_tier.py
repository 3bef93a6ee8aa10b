"""Knowledge-graph facts as a ``memory_search`` tier (``tier="kg"``), and their expansion.

Through the memory plugin's hooks (``goclaw_memory_search_extra``, ``goclaw_memory_expand``),
never its code. A fact is a current entity of the search's scope ("Ada (person): lead
engineer") or a current relation ("Ada works at Acme"); its score is the share of the query's
distinct terms it holds (:func:`goclaw_search.answer.coverage`, 0..1 as the other tiers), the
newest :data:`MAX_FACTS` of each kind considered. A hit's id is ``kg:e:<entity id>`` or
``kg:r:<relation id>``; ``memory_get`` expands it to the entity with its current relations, or
to the relation with both ends. A hit is dated by its ``valid_from`` (``extra["date"]``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

import numpy as np
from sqlmodel import col, select

from goclaw.contracts.agents import user_scope
from goclaw.contracts.hooks import SearchHit
from goclaw.contracts.records import entity_dict, relation_dict
from goclaw.errors import NotFoundError
from goclaw_kg.tables import KGEntity, KGRelation
from goclaw_search.answer import coverage, fuse_absolute
from goclaw_search.tokenize import query_terms, terms

MAX_FACTS = 5_000  # the newest current entities, and relations, a search reads of a scope
TIER = "kg"


def _fact(
    kind: str, row_id: str, user_id: str, text: str, name: str, since: datetime | None, score: float
) -> SearchHit:
    return SearchHit(
        id=f"kg:{kind}:{row_id}",
        score=score,
        text=text,
        path=f"kg:{name}",
        scope="user" if user_id else "agent",
        tier=TIER,
        extra={"kind": "entity" if kind == "e" else "relation", "date": since.isoformat() if since else None},
    )


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
    wanted = list(dict.fromkeys(query_terms(query)))
    if not wanted or limit < 1:
        return []
    scope = user_scope(user)
    e, r = KGEntity, KGRelation
    dated_e, dated_r = _valid_from_within(e, since, until), _valid_from_within(r, since, until)
    with engine.db.session() as s:
        # Plain columns (no timestamps: parsing 10k of them costs more than the search); the
        # dates of the few facts returned are read afterwards.
        read = s.connection().execute  # core rows: no ORM row processing for 10k facts
        ents = read(
            select(e.id, e.user_id, e.name, e.entity_type, e.description)
            .where(e.agent_id == agent.id, col(e.user_id).in_(scope), col(e.valid_until).is_(None), *dated_e)
            .order_by(col(e.valid_from).desc())
            .limit(MAX_FACTS)
        ).all()
        rels = read(
            select(r.id, r.user_id, r.source_entity_id, r.relation_type, r.target_entity_id)
            .where(r.agent_id == agent.id, col(r.user_id).in_(scope), col(r.valid_until).is_(None), *dated_r)
            .order_by(col(r.valid_from).desc())
            .limit(MAX_FACTS)
        ).all()
        names = {str(row[0]): str(row[2]) for row in ents}
        ends = {x for row in rels for x in (row[2], row[4])} - set(names)
        if ends:
            names.update(s.exec(select(e.id, e.name).where(col(e.id).in_(ends))).all())
        # (kind, id, user id, text, name) per fact: entities first, then relations.
        facts = [
            ("e", eid, uid, f"{name} ({etype})" + (f": {desc}" if desc else ""), name)
            for eid, uid, name, etype, desc in ents
        ]
        for rid, uid, src, rtype, dst in rels:
            a, b = names.get(src, src), names.get(dst, dst)
            facts.append(("r", rid, uid, f"{a} {rtype.replace('_', ' ')} {b}", a))
        if not facts:
            return []
        held = [_terms_of(f[3]) for f in facts]
        n = len(held)
        lexical = coverage([np.fromiter((t in h for h in held), dtype=np.bool_, count=n) for t in wanted])
        best = fuse_absolute(lexical, None, None, limit)
        dates = _dates(s, [facts[slot] for slot, _ in best])
    out = []
    for slot, score in best:
        kind, row_id, uid, text, name = facts[slot]
        out.append(_fact(kind, row_id, uid, text, name, dates.get((kind, row_id)), min(1.0, float(score))))
    return out


def _valid_from_within(table: Any, since: str | None, until: str | None) -> list[Any]:
    """SQL conditions: ``table.valid_from`` on a day from ``since`` to ``until`` (ISO days)."""
    conds = []
    if since:
        conds.append(col(table.valid_from) >= datetime.fromisoformat(since))
    if until:
        conds.append(col(table.valid_from) < datetime.fromisoformat(until) + timedelta(days=1))
    return conds


@lru_cache(maxsize=1 << 16)
def _terms_of(text: str) -> frozenset[str]:
    """A fact's terms, remembered by its text: a search reads up to 2 × :data:`MAX_FACTS` facts,
    and tokenizing them all again on every search would cost more than the rest of it."""
    return frozenset(terms(text))


def _dates(s: Any, facts: list[tuple[str, str, str, str, str]]) -> dict[tuple[str, str], datetime]:
    """``valid_from`` of the given facts, by ``(kind, id)``."""
    out: dict[tuple[str, str], datetime] = {}
    for kind, table in (("e", KGEntity), ("r", KGRelation)):
        ids = [f[1] for f in facts if f[0] == kind]
        if ids:
            rows = s.exec(select(table.id, table.valid_from).where(col(table.id).in_(ids))).all()
            out.update({(kind, str(i)): since for i, since in rows})
    return out


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
