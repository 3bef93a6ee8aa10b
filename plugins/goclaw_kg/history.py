"""Temporal edits of the knowledge graph: supersede an entity or a
relation (close the old row, insert the new one, one transaction) and merge a duplicate into the
entity it duplicates (the dedup worker, ``goclaw kg merge``). Nothing is ever deleted: closed rows
keep their validity, merged ones point at the survivor. Part of
:class:`~goclaw_kg.graph.KnowledgeGraph`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import or_, text
from sqlmodel import Session, col, select

from goclaw.contracts.columns import utcnow
from goclaw.errors import NotFoundError, ValidationError
from goclaw_kg.settings import settings_of
from goclaw_kg.tables import KGDedupCandidate, KGEntity, KGRelation
from goclaw_kg.upserts import relation_type_key, with_episodes
from goclaw_text.entities import normalize_name
from goclaw_text.redaction import redact_for


class History:
    """Supersede and merge; needs ``engine`` and ``_check_tenant`` from the graph."""

    engine: Any
    _check_tenant: Callable[[Session, str, str], None]

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
        A new name or description is redacted like extracted facts."""
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
        if self.engine.db.backend == "postgresql":  # one merge per agent at a time
            keep_probe = session.get(KGEntity, keep_id)
            if keep_probe is not None:
                session.execute(
                    text("SELECT pg_advisory_xact_lock(hashtext(:k))"), {"k": "kg:" + keep_probe.agent_id}
                )
        keep, drop = session.get(KGEntity, keep_id), session.get(KGEntity, drop_id)
        if keep is None or drop is None:
            raise NotFoundError("unknown entity in merge")
        _check_mergeable(keep, drop, allow_types)
        drop.valid_until = at
        drop.merged_into = keep.id
        session.add(drop)
        _absorb(keep, drop, at)
        session.add(keep)
        session.flush()
        self._repoint_relations(session, drop.id, keep.id, at)
        _close_candidates(session, keep.id, drop.id, at)
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


def _check_mergeable(keep: KGEntity, drop: KGEntity, allow_types: bool) -> None:
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


def _absorb(keep: KGEntity, drop: KGEntity, at: datetime) -> None:
    """``keep`` takes ``drop``'s names as aliases, its episodes, its confidence if higher and its
    description if it has none."""
    props = dict(keep.properties or {})
    aliases = list(props.get("aliases", []))
    for alias in [drop.name, *(drop.properties or {}).get("aliases", [])]:
        if alias != keep.name and alias not in aliases:
            aliases.append(alias)
    props["aliases"] = aliases
    props["episodic_ids"] = with_episodes(props, (drop.properties or {}).get("episodic_ids", []))
    keep.properties = props
    keep.confidence = max(keep.confidence, drop.confidence)
    if not keep.description and drop.description:
        keep.description = drop.description
    keep.updated_at = at


def _close_candidates(session: Session, keep_id: str, drop_id: str, at: datetime) -> None:
    """A pending dedup candidate for exactly this pair is now ``merged``."""
    for cand in session.exec(
        select(KGDedupCandidate).where(
            or_(
                col(KGDedupCandidate.entity_a_id).in_([keep_id, drop_id]),
                col(KGDedupCandidate.entity_b_id).in_([keep_id, drop_id]),
            ),
            KGDedupCandidate.status == "pending",
        )
    ):
        if {cand.entity_a_id, cand.entity_b_id} == {keep_id, drop_id}:
            cand.status, cand.reviewed_at = "merged", at
            session.add(cand)
