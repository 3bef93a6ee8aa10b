"""Upserts into the knowledge graph (the semantic worker's writes): an entity by name
and type (following ``merged_into`` from a merged alias), a relation (an ``exclusive`` type
closes the source's other current relation of that type). Part of :class:`~goclaw_kg.graph.KnowledgeGraph`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from goclaw.contracts.columns import utcnow
from goclaw_kg.tables import KGEntity, KGRelation
from goclaw_text.entities import normalize_name

MAX_EPISODE_LINKS = 50  # an entity remembers its latest episodes only


def relation_type_key(value: str) -> str:
    key = normalize_name(value).replace(" ", "_")
    return key[:128] or "related_to"


def with_episodes(properties: dict[str, Any] | None, episodic_ids: list[str]) -> list[str]:
    """The entity's ``episodic_ids`` with ``episodic_ids`` appended (no repeats), latest
    :data:`MAX_EPISODE_LINKS` kept (an upsert, a merge)."""
    eps = list((properties or {}).get("episodic_ids", []))
    for ep in episodic_ids:
        if ep not in eps:
            eps.append(ep)
    return eps[-MAX_EPISODE_LINKS:]


class Upserts:
    """The write half the semantic worker uses, in the caller's transaction."""

    engine: Any

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
                props["episodic_ids"] = with_episodes(props, [episodic_id])
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
