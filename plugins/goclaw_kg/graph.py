"""The temporal knowledge graph (L2): ``engine.kg`` (spec §18, §20, DECISIONS.md).

* Validity: every entity and relation has ``valid_from`` and ``valid_until`` (NULL = current).
  Current-only queries use ``valid_until IS NULL``; as-of queries use
  ``valid_from <= t AND (valid_until IS NULL OR valid_until > t)`` (exclusive end, unlike the
  Go code's inclusive one), so at the exact supersession instant only the new row is valid.
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

from sqlalchemy import or_, text
from sqlmodel import Session, col, select

from goclaw.agents import require_agent, user_scope
from goclaw.errors import NotFoundError, ValidationError
from goclaw.nlp.entities import normalize_name
from goclaw.redaction import redact_for
from goclaw.retrieval.embed import embed_texts
from goclaw.store.models import Agent, KGDedupCandidate, KGEntity, KGRelation
from goclaw.store.types import utcnow
from goclaw_kg.settings import settings_of


def relation_type_key(value: str) -> str:
    key = normalize_name(value).replace(" ", "_")
    return key[:128] or "related_to"


def _valid_at(model: Any, as_of: datetime | None) -> Any:
    if as_of is None:
        return col(model.valid_until).is_(None)
    return (col(model.valid_from) <= as_of) & (
        col(model.valid_until).is_(None) | (col(model.valid_until) > as_of)
    )


class KnowledgeGraph:
    """``engine.kg``."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    # ------------------------------------------------------------------ tenant (issue 12 §20)
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
            names = {e.id: e.name for e in s.exec(select(KGEntity).where(col(KGEntity.id).in_(ids)))}
        return [(r, names) for r in rels]

    def facts_for_episode(self, episodic_id: str) -> tuple[list[KGEntity], list[KGRelation]]:
        """Entities and relations extracted from one episodic summary (``memory_expand``)."""
        with self.engine.db.session() as s:
            ents = [
                e
                for e in s.exec(select(KGEntity).where(col(KGEntity.valid_until).is_(None)))
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
            return {e.id: e.name for e in s.exec(select(KGEntity).where(col(KGEntity.id).in_(wanted)))}

    # ------------------------------------------------------------------ upserts (semantic worker)
    def current_entity(
        self, session: Session, agent_id: str, user_id: str, name: str, entity_type: str
    ) -> KGEntity | None:
        """The current row for this name and type, following ``merged_into`` from a merged alias."""
        norm = normalize_name(name)
        row = session.exec(
            select(KGEntity).where(
                KGEntity.agent_id == agent_id,
                KGEntity.user_id == user_id,
                KGEntity.normalized_name == norm,
                KGEntity.entity_type == entity_type,
                col(KGEntity.valid_until).is_(None),
            )
        ).first()
        if row is not None:
            return row
        alias = session.exec(
            select(KGEntity)
            .where(
                KGEntity.agent_id == agent_id,
                KGEntity.user_id == user_id,
                KGEntity.normalized_name == norm,
                KGEntity.entity_type == entity_type,
                col(KGEntity.merged_into).is_not(None),
            )
            .order_by(col(KGEntity.valid_until).desc())
        ).first()
        seen: set[str] = set()
        while alias is not None and alias.merged_into and alias.id not in seen:
            seen.add(alias.id)
            target = session.get(KGEntity, alias.merged_into)
            if target is None:
                return None
            if target.valid_until is None:
                return target
            alias = target
        return None

    def upsert_entity(
        self,
        session: Session,
        *,
        agent_id: str,
        user_id: str,
        name: str,
        entity_type: str,
        description: str = "",
        confidence: float = 1.0,
        episodic_id: str = "",
        now: datetime | None = None,
        embedding: Any = None,
    ) -> tuple[KGEntity, bool]:
        """Insert or update the current entity; returns ``(row, created)``."""
        now = now or utcnow()
        entity_type = relation_type_key(entity_type or "thing")[:64]
        row = self.current_entity(session, agent_id, user_id, name, entity_type)
        if row is not None:
            row.confidence = max(float(row.confidence), float(confidence))
            if description and not row.description:
                row.description = description
            props = dict(row.properties or {})
            if episodic_id:
                eps = list(props.get("episodic_ids", []))
                if episodic_id not in eps:
                    eps.append(episodic_id)
                props["episodic_ids"] = eps[-50:]
            row.properties = props
            row.updated_at = now
            session.add(row)
            return row, False
        row = KGEntity(
            tenant_id=self.engine.settings.tenant_id,
            agent_id=agent_id,
            user_id=user_id,
            name=name.strip()[:512],
            normalized_name=normalize_name(name)[:512],
            entity_type=entity_type,
            description=description,
            confidence=float(confidence),
            source_id=episodic_id,
            properties={"episodic_ids": [episodic_id]} if episodic_id else {},
            valid_from=now,
            created_at=now,
            updated_at=now,
        )
        if embedding is not None:
            row.embedding, row.embedding_provider, row.embedding_model, row.embedding_dim = embedding
        session.add(row)
        session.flush()
        return row, True

    def upsert_relation(
        self,
        session: Session,
        *,
        agent_id: str,
        user_id: str,
        source: KGEntity,
        target: KGEntity,
        relation_type: str,
        confidence: float = 1.0,
        episodic_id: str = "",
        exclusive: bool = False,
        now: datetime | None = None,
    ) -> tuple[KGRelation, bool]:
        """Insert or update a current relation. ``exclusive`` types (``works_at``) supersede the
        source's other current relation of that type: the old one is closed, never deleted."""
        now = now or utcnow()
        rtype = relation_type_key(relation_type)
        row = session.exec(
            select(KGRelation).where(
                KGRelation.agent_id == agent_id,
                KGRelation.user_id == user_id,
                KGRelation.source_entity_id == source.id,
                KGRelation.target_entity_id == target.id,
                KGRelation.relation_type == rtype,
                col(KGRelation.valid_until).is_(None),
            )
        ).first()
        if row is not None:
            row.confidence = max(float(row.confidence), float(confidence))
            session.add(row)
            return row, False
        if exclusive:
            for old in session.exec(
                select(KGRelation).where(
                    KGRelation.agent_id == agent_id,
                    KGRelation.user_id == user_id,
                    KGRelation.source_entity_id == source.id,
                    KGRelation.relation_type == rtype,
                    col(KGRelation.valid_until).is_(None),
                )
            ):
                old.valid_until = now
                session.add(old)
            session.flush()
        row = KGRelation(
            tenant_id=self.engine.settings.tenant_id,
            agent_id=agent_id,
            user_id=user_id,
            source_entity_id=source.id,
            target_entity_id=target.id,
            relation_type=rtype,
            confidence=float(confidence),
            source_id=episodic_id,
            valid_from=now,
            created_at=now,
        )
        session.add(row)
        session.flush()
        return row, True

    # ------------------------------------------------------------------ temporal edits
    def supersede_entity(
        self,
        entity_id: str,
        *,
        name: str | None = None,
        entity_type: str | None = None,
        description: str | None = None,
        confidence: float | None = None,
        properties: dict[str, Any] | None = None,
        at: datetime | None = None,
    ) -> KGEntity:
        """Close the current row ``entity_id`` at ``at`` and insert its replacement, valid
        from ``at``, in one transaction. Current relations move to the new row the same way.
        A new name or description is redacted like extracted facts (issue 12 §1)."""
        at = at or utcnow()
        if settings_of(self.engine).redact:
            name = redact_for(self.engine, name) if name else name
            description = redact_for(self.engine, description) if description else description

        def _do(session: Session) -> KGEntity:
            old = session.get(KGEntity, entity_id)
            if old is None:
                raise NotFoundError(f"unknown entity {entity_id!r}")
            self._check_tenant(session, old.agent_id, f"entity {entity_id!r}")
            if old.valid_until is not None:
                raise ValidationError(f"entity {entity_id!r} is not current (valid until {old.valid_until})")
            if at < old.valid_from:
                raise ValidationError("a replacement cannot start before the fact it replaces")
            old.valid_until = at
            session.add(old)
            session.flush()
            new = KGEntity(
                tenant_id=old.tenant_id,
                agent_id=old.agent_id,
                user_id=old.user_id,
                name=name or old.name,
                normalized_name=normalize_name(name or old.name),
                entity_type=relation_type_key(entity_type)[:64] if entity_type else old.entity_type,
                description=old.description if description is None else description,
                confidence=old.confidence if confidence is None else confidence,
                properties={**(old.properties or {}), **(properties or {}), "supersedes": old.id},
                embedding=old.embedding,
                embedding_provider=old.embedding_provider,
                embedding_model=old.embedding_model,
                embedding_dim=old.embedding_dim,
                source_id=old.source_id,
                valid_from=at,
                created_at=at,
                updated_at=at,
            )
            session.add(new)
            session.flush()
            self._repoint_relations(session, old.id, new.id, at)
            return new

        return self.engine.db.run_write(_do)

    def supersede_relation(
        self,
        relation_id: str,
        *,
        target_id: str | None = None,
        relation_type: str | None = None,
        confidence: float | None = None,
        at: datetime | None = None,
    ) -> KGRelation:
        """Close relation ``relation_id`` at ``at`` and insert its replacement (new target/type)."""
        at = at or utcnow()

        def _do(session: Session) -> KGRelation:
            old = session.get(KGRelation, relation_id)
            if old is None:
                raise NotFoundError(f"unknown relation {relation_id!r}")
            self._check_tenant(session, old.agent_id, f"relation {relation_id!r}")
            if old.valid_until is not None:
                raise ValidationError(f"relation {relation_id!r} is not current")
            if target_id is not None:
                target = session.get(KGEntity, target_id)
                if target is None or target.agent_id != old.agent_id or target.valid_until is not None:
                    raise ValidationError(
                        f"target entity {target_id!r} is not a current entity of this agent"
                    )
            old.valid_until = at
            session.add(old)
            session.flush()
            new = KGRelation(
                tenant_id=old.tenant_id,
                agent_id=old.agent_id,
                user_id=old.user_id,
                source_entity_id=old.source_entity_id,
                target_entity_id=target_id or old.target_entity_id,
                relation_type=relation_type_key(relation_type) if relation_type else old.relation_type,
                confidence=old.confidence if confidence is None else confidence,
                properties={**(old.properties or {}), "supersedes": old.id},
                source_id=old.source_id,
                valid_from=at,
                created_at=at,
            )
            session.add(new)
            session.flush()
            return new

        return self.engine.db.run_write(_do)

    def _repoint_relations(self, session: Session, old_id: str, new_id: str, at: datetime) -> int:
        moved = 0
        rels = list(
            session.exec(
                select(KGRelation).where(
                    or_(KGRelation.source_entity_id == old_id, KGRelation.target_entity_id == old_id),
                    col(KGRelation.valid_until).is_(None),
                )
            )
        )
        for rel in rels:
            rel.valid_until = at
            session.add(rel)
        session.flush()
        for rel in rels:
            src = new_id if rel.source_entity_id == old_id else rel.source_entity_id
            dst = new_id if rel.target_entity_id == old_id else rel.target_entity_id
            if src == dst:
                continue  # a relation between the two merged nodes becomes a self-loop: drop
            dup = session.exec(
                select(KGRelation).where(
                    KGRelation.agent_id == rel.agent_id,
                    KGRelation.user_id == rel.user_id,
                    KGRelation.source_entity_id == src,
                    KGRelation.target_entity_id == dst,
                    KGRelation.relation_type == rel.relation_type,
                    col(KGRelation.valid_until).is_(None),
                )
            ).first()
            if dup is not None:
                dup.confidence = max(dup.confidence, rel.confidence)
                session.add(dup)
                continue
            session.add(
                KGRelation(
                    tenant_id=rel.tenant_id,
                    agent_id=rel.agent_id,
                    user_id=rel.user_id,
                    source_entity_id=src,
                    target_entity_id=dst,
                    relation_type=rel.relation_type,
                    confidence=rel.confidence,
                    properties={**(rel.properties or {}), "supersedes": rel.id},
                    source_id=rel.source_id,
                    valid_from=at,
                    created_at=at,
                )
            )
            session.flush()
            moved += 1
        return moved

    # ------------------------------------------------------------------ merging (dedup)
    def merge_in_session(
        self,
        session: Session,
        keep_id: str,
        drop_id: str,
        at: datetime | None = None,
        *,
        allow_types: bool = False,
    ) -> KGEntity:
        """Merge entity ``drop_id`` into ``keep_id`` (same agent, user and type; both current).
        ``allow_types``: the types may differ (a reviewed candidate, or dedup folding an untyped
        near-identical name into a typed one); ``keep``'s type stays."""
        at = at or utcnow()
        if self.engine.db.backend == "postgresql":
            keep_probe = session.get(KGEntity, keep_id)
            if keep_probe is not None:
                session.execute(
                    text("SELECT pg_advisory_xact_lock(hashtext(:k))"), {"k": "kg:" + keep_probe.agent_id}
                )
        keep, drop = session.get(KGEntity, keep_id), session.get(KGEntity, drop_id)
        if keep is None or drop is None:
            raise NotFoundError("unknown entity in merge")
        if keep.id == drop.id:
            raise ValidationError("cannot merge an entity into itself")
        if (keep.agent_id, keep.user_id) != (drop.agent_id, drop.user_id):
            raise ValidationError("entities of different agents or users are never merged")
        if keep.entity_type != drop.entity_type and not allow_types:
            raise ValidationError(
                f"entities of different types are never merged ({keep.entity_type} vs {drop.entity_type})"
            )
        if keep.valid_until is not None or drop.valid_until is not None:
            raise ValidationError("only current entities can be merged")
        drop.valid_until = at
        drop.merged_into = keep.id
        session.add(drop)
        props = dict(keep.properties or {})
        aliases = list(props.get("aliases", []))
        for alias in [drop.name, *(drop.properties or {}).get("aliases", [])]:
            if alias != keep.name and alias not in aliases:
                aliases.append(alias)
        props["aliases"] = aliases
        eps = list(props.get("episodic_ids", []))
        for ep in (drop.properties or {}).get("episodic_ids", []):
            if ep not in eps:
                eps.append(ep)
        props["episodic_ids"] = eps[-50:]
        keep.properties = props
        keep.confidence = max(keep.confidence, drop.confidence)
        if not keep.description and drop.description:
            keep.description = drop.description
        keep.updated_at = at
        session.add(keep)
        session.flush()
        self._repoint_relations(session, drop.id, keep.id, at)
        for cand in session.exec(
            select(KGDedupCandidate).where(
                or_(
                    col(KGDedupCandidate.entity_a_id).in_([keep.id, drop.id]),
                    col(KGDedupCandidate.entity_b_id).in_([keep.id, drop.id]),
                ),
                KGDedupCandidate.status == "pending",
            )
        ):
            if {cand.entity_a_id, cand.entity_b_id} == {keep.id, drop.id}:
                cand.status, cand.reviewed_at = "merged", at
                session.add(cand)
        return keep

    def merge(self, keep_id: str, drop_id: str) -> KGEntity:
        def _do(session: Session) -> KGEntity:
            for entity_id in (keep_id, drop_id):
                row = session.get(KGEntity, entity_id)
                if row is None:
                    raise NotFoundError("unknown entity in merge")
                self._check_tenant(session, row.agent_id, "entity in merge")
            return self.merge_in_session(session, keep_id, drop_id)

        return self.engine.db.run_write(_do)

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
            names = {e.id: e.name for e in s.exec(select(KGEntity).where(col(KGEntity.id).in_(ids)))}
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
