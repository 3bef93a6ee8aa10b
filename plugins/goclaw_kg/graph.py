"""The temporal knowledge graph (L2): ``engine.kg``.

* Validity: every entity and relation has ``valid_from`` and ``valid_until`` (NULL = current).
  Current-only queries use ``valid_until IS NULL``; as-of queries use
  ``valid_from <= t AND (valid_until IS NULL OR valid_until > t)`` (an exclusive end), so at
  the exact supersession instant only the new row is valid.
* Supersede closes the old row and inserts the new one in one transaction; uniqueness holds
  among current rows only (partial unique indexes). Relations that touch a superseded entity
  are superseded with it, re-pointed at the new row, so an as-of query stays consistent.
* Merge (the dedup worker, or ``goclaw kg merge``) closes the duplicate with
  ``merged_into`` set and re-points its current relations: nothing is ever deleted.
* Scope: rows belong to ``(agent_id, user_id)``; a user sees agent-level ("") plus their own.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import String, cast, or_
from sqlmodel import Session, col, select

from goclaw.contracts.agents import require_agent, user_scope
from goclaw.contracts.columns import utcnow
from goclaw.contracts.providers import embed_texts
from goclaw.contracts.store import Agent
from goclaw.errors import NotFoundError, ValidationError
from goclaw_kg.history import History
from goclaw_kg.tables import KGDedupCandidate, KGEntity, KGRelation
from goclaw_kg.upserts import Upserts, relation_type_key

__all__ = ["KnowledgeGraph", "relation_type_key"]


def _valid_at(model: Any, as_of: datetime | None) -> Any:
    if as_of is None:
        return col(model.valid_until).is_(None)
    return (col(model.valid_from) <= as_of) & (
        col(model.valid_until).is_(None) | (col(model.valid_until) > as_of)
    )


class KnowledgeGraph(Upserts, History):
    """``engine.kg``: queries and review here; upserts in :mod:`goclaw_kg.upserts`, supersede and
    merge in :mod:`goclaw_kg.history`."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    # ------------------------------------------------------------------ tenant
    def _check_tenant(self, session: Session, agent_id: str, what: str) -> None:
        """Id-based edits reach only rows of this engine's tenant; others are "unknown"."""
        agent = session.get(Agent, agent_id)
        if agent is None or agent.tenant_id != self.engine.settings.tenant_id:
            raise NotFoundError(f"unknown {what}")

    # ------------------------------------------------------------------ queries
    def entities(
        self,
        agent: str,
        user: str | None = None,
        *,
        as_of: datetime | None = None,
        include_history: bool = False,
        limit: int = 1000,
    ) -> list[KGEntity]:
        """Current entities (or those valid at ``as_of``; all versions with ``include_history``)."""
        a = require_agent(self.engine, agent)
        stmt = select(KGEntity).where(KGEntity.agent_id == a.id, col(KGEntity.user_id).in_(user_scope(user)))
        if not include_history:
            stmt = stmt.where(_valid_at(KGEntity, as_of))
        stmt = stmt.order_by(col(KGEntity.name), col(KGEntity.valid_from)).limit(limit)
        with self.engine.db.session() as s:
            return list(s.exec(stmt))

    def relations(
        self,
        agent: str,
        user: str | None = None,
        *,
        as_of: datetime | None = None,
        include_history: bool = False,
        limit: int = 1000,
    ) -> list[tuple[KGRelation, dict[str, str]]]:
        """Relations valid now / at ``as_of``, with ``{entity_id: name}`` for display."""
        a = require_agent(self.engine, agent)
        stmt = select(KGRelation).where(
            KGRelation.agent_id == a.id, col(KGRelation.user_id).in_(user_scope(user))
        )
        if not include_history:
            stmt = stmt.where(_valid_at(KGRelation, as_of))
        stmt = stmt.order_by(col(KGRelation.valid_from), col(KGRelation.id)).limit(limit)
        with self.engine.db.session() as s:
            rels = list(s.exec(stmt))
            ids = {r.source_entity_id for r in rels} | {r.target_entity_id for r in rels}
            names = _names(s, ids)
        return [(r, names) for r in rels]

    def facts_for_episode(self, episodic_id: str) -> tuple[list[KGEntity], list[KGRelation]]:
        """Entities and relations extracted from one episodic summary (``memory_expand``).

        The database narrows the entities to those whose ``source_id`` is the summary or whose
        properties mention its id; the exact ``episodic_ids`` test runs here, on those rows only
        (run on every current entity of every agent, it takes 1.4 s a call at 20,000 entities)."""
        mentions = cast(col(KGEntity.properties), String).like(f"%{_like_escape(episodic_id)}%", escape="\\")
        with self.engine.db.session() as s:
            found = s.exec(
                select(KGEntity).where(
                    col(KGEntity.valid_until).is_(None), or_(KGEntity.source_id == episodic_id, mentions)
                )
            )
            ents = [
                e
                for e in found
                if e.source_id == episodic_id or episodic_id in (e.properties or {}).get("episodic_ids", [])
            ]
            rels = list(
                s.exec(
                    select(KGRelation).where(
                        KGRelation.source_id == episodic_id, col(KGRelation.valid_until).is_(None)
                    )
                )
            )
        return ents, rels

    def entity_names(self, ids: Iterable[str]) -> dict[str, str]:
        """``{entity id: name}`` for ``ids`` (a relation's endpoints, ``memory_expand``)."""
        wanted = set(ids)
        if not wanted:
            return {}
        with self.engine.db.session() as s:
            return _names(s, wanted)

    # ------------------------------------------------------------------ candidates (review)
    def candidates(self, agent: str | None = None, status: str | None = "pending") -> list[dict[str, Any]]:
        stmt = select(KGDedupCandidate)
        if agent:
            stmt = stmt.where(KGDedupCandidate.agent_id == require_agent(self.engine, agent).id)
        else:
            tenant_agents = select(Agent.id).where(Agent.tenant_id == self.engine.settings.tenant_id)
            stmt = stmt.where(col(KGDedupCandidate.agent_id).in_(tenant_agents))
        if status:
            stmt = stmt.where(KGDedupCandidate.status == status)
        with self.engine.db.session() as s:
            rows = list(s.exec(stmt.order_by(col(KGDedupCandidate.id))))
            ids = {r.entity_a_id for r in rows} | {r.entity_b_id for r in rows}
            names = _names(s, ids)
        return [
            {
                "id": r.id,
                "entity_a_id": r.entity_a_id,
                "entity_a": names.get(r.entity_a_id),
                "entity_b_id": r.entity_b_id,
                "entity_b": names.get(r.entity_b_id),
                "cosine": round(r.cosine, 4),
                "name_similarity": round(r.name_similarity, 4),
                "status": r.status,
                "user_id": r.user_id,
            }
            for r in rows
        ]

    def review_candidate(self, candidate_id: int, accept: bool) -> dict[str, Any]:
        def _do(session: Session) -> dict[str, Any]:
            cand = session.get(KGDedupCandidate, candidate_id)
            if cand is None:
                raise NotFoundError(f"unknown dedup candidate {candidate_id}")
            self._check_tenant(session, cand.agent_id, f"dedup candidate {candidate_id}")
            if cand.status != "pending":
                raise ValidationError(f"candidate {candidate_id} is already {cand.status}")
            if accept:
                a, b = session.get(KGEntity, cand.entity_a_id), session.get(KGEntity, cand.entity_b_id)
                if a is None or b is None:
                    raise NotFoundError("a candidate entity no longer exists")
                keep, drop = (
                    (a, b)
                    if (a.confidence, -a.created_at.timestamp()) >= (b.confidence, -b.created_at.timestamp())
                    else (b, a)
                )
                # Dedup proposes other-type pairs only for near-identical names: a reviewer's
                # accept merges them.
                self.merge_in_session(session, keep.id, drop.id, allow_types=True)
                cand.status = "merged"
            else:
                cand.status = "rejected"
            cand.reviewed_at = utcnow()
            session.add(cand)
            return {"id": cand.id, "status": cand.status}

        return self.engine.db.run_write(_do)

    def embed_names(self, names: Iterable[str]) -> dict[str, tuple[Any, str, str, int]]:
        names = list(names)
        emb = embed_texts(self.engine, names)
        if emb is None:
            return {}
        return {n: (emb.vectors[i], emb.provider, emb.model, emb.dim) for i, n in enumerate(names)}


def _names(session: Session, ids: set[str]) -> dict[str, str]:
    """``{entity id: name}`` for ``ids`` in one query (none when there are no ids)."""
    if not ids:
        return {}
    return {e.id: e.name for e in session.exec(select(KGEntity).where(col(KGEntity.id).in_(ids)))}


def _like_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
