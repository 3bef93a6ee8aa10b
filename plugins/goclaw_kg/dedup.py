"""Plugin ``goclaw.workers.dedup``: the DedupWorker (after the semantic worker), with safe thresholds.

For each upserted entity that has an embedding, compare it with the other current entities of
the same agent, user **and type** embedded by the same model. A wrong merge destroys
knowledge, so auto-merge needs both gates at once:

* cosine ≥ ``dedup_auto_merge_cosine`` (0.95) **and**
* name similarity ≥ ``dedup_auto_merge_name`` (0.985) — Jaro-Winkler over the names with
  case, accents, spaces and punctuation ignored, or over their sorted words
  ("Open AI" = "OpenAI", "Atlas Project" = "Project Atlas"; "Jon Smith" vs "John Smith"
  scores 0.970 and is only proposed).

Pairs that pass either lower gate (cosine ≥ 0.85 or name ≥ 0.90) go to
``kg_dedup_candidates`` for review (``goclaw kg candidates``). A merge keeps the
higher-confidence row (the older on a tie), closes the other with ``merged_into`` and
re-points its relations; nothing is deleted.

Types: an entity is compared with entities of other types too when the names are
near-identical (name similarity ≥ ``dedup_auto_merge_name``), because a model-free typer can
type one spelling and not the other ("OpenAI" technology, "Open AI" concept, which a same-type
comparison would never pair). Such a pair merges automatically only when one side is untyped
(``concept``), into the typed one; two different real types ("Jordan" person / place) are only proposed.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from goclaw import hookimpl
from goclaw_kg.graph import KnowledgeGraph
from goclaw_kg.settings import settings_of
from goclaw_kg.similarity import name_similarity
from goclaw_kg.tables import KGDedupCandidate, KGEntity

log = logging.getLogger("goclaw.kg")

UNTYPED = frozenset({"concept", "thing"})  # what a typer says when it does not know


def _cosine(a: Any, b: Any) -> float:
    import numpy as np

    va, vb = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    na, nb = float(np.linalg.norm(va)), float(np.linalg.norm(vb))
    if na == 0 or nb == 0:
        return 0.0
    return float(va @ vb) / (na * nb)


def decide(cosine: float, name_sim: float, cfg: Any) -> str:
    """``merge`` | ``candidate`` | ``distinct`` for a same-type pair (module docstring)."""
    if cosine >= cfg.dedup_auto_merge_cosine and name_sim >= cfg.dedup_auto_merge_name:
        return "merge"
    if cosine >= cfg.dedup_candidate_cosine or name_sim >= cfg.dedup_candidate_name:
        return "candidate"
    return "distinct"


class DedupWorker:
    name = "dedup"
    event_types = frozenset({"entity.upserted"})

    def handle(self, event: Any, engine: Any) -> None:
        if not engine.has_service("kg"):  # goclaw.kg is off: its tables may not exist
            return
        ids = [str(i) for i in event.payload.get("entity_ids") or []]
        cfg = settings_of(engine)
        kg = KnowledgeGraph(engine)
        for entity_id in ids:
            engine.db.run_write(lambda s, eid=entity_id: self._dedup_one(s, kg, eid, cfg))

    @staticmethod
    def _verdict(me: KGEntity, other: KGEntity, cos: float, name_sim: float, cfg: Any) -> str:
        """:func:`decide`, then the type rule (module docstring): ``merge_typed`` folds an
        untyped near-identical entity into a typed one; two real types are only proposed."""
        verdict = decide(cos, name_sim, cfg)
        if verdict == "merge" and other.entity_type != me.entity_type:
            untyped = {e.entity_type for e in (me, other)} & UNTYPED
            return "merge_typed" if len(untyped) == 1 else "candidate"
        return verdict

    def _dedup_one(self, session: Session, kg: KnowledgeGraph, entity_id: str, cfg: Any) -> None:
        me = session.get(KGEntity, entity_id)
        if me is None or me.valid_until is not None or me.embedding is None:
            return
        judged = self._judge(session, me, cfg)
        # A merge first: no candidate is recorded for an entity that is closed the next moment.
        if not _merge_first(session, kg, me, judged):
            _record_candidates(session, me, judged)

    def _judge(self, session: Session, me: KGEntity, cfg: Any) -> list[tuple[str, float, float, KGEntity]]:
        """``(verdict, cosine, name similarity, other)`` for the five closest current entities of
        the same scope and embedding space (the same type, or a near-identical name)."""
        others = session.exec(
            select(KGEntity).where(
                KGEntity.agent_id == me.agent_id,
                KGEntity.user_id == me.user_id,
                KGEntity.id != me.id,
                col(KGEntity.valid_until).is_(None),
                KGEntity.embedding_dim == me.embedding_dim,
                KGEntity.embedding_model == me.embedding_model,
                KGEntity.embedding_provider == me.embedding_provider,
            )
        ).all()
        scored = sorted(
            (
                (_cosine(me.embedding, o.embedding), name_similarity(me.name, o.name), o)
                for o in others
                if o.embedding is not None
            ),
            key=lambda t: (-(t[0] + t[1]), t[2].id),
        )
        same_or_near = [
            t for t in scored if t[2].entity_type == me.entity_type or t[1] >= cfg.dedup_auto_merge_name
        ]
        return [
            (self._verdict(me, other, cos, name_sim, cfg), cos, name_sim, other)
            for cos, name_sim, other in same_or_near[:5]
        ]


def _merge_first(
    session: Session, kg: KnowledgeGraph, me: KGEntity, judged: list[tuple[str, float, float, KGEntity]]
) -> bool:
    """Merge the first pair judged a merge; whether one was merged (``me`` may be closed now;
    later events handle the rest)."""
    for verdict, cos, name_sim, other in judged:
        if verdict == "merge_typed":
            keep, drop = (other, me) if me.entity_type in UNTYPED else (me, other)
            kg.merge_in_session(session, keep.id, drop.id, allow_types=True)
            log.info(
                "dedup: merged %r (%s) into %r (%s)", drop.name, drop.entity_type, keep.name, keep.entity_type
            )
            return True
        if verdict == "merge":
            keep, drop = sorted((me, other), key=lambda e: (-e.confidence, e.created_at, e.id))
            kg.merge_in_session(session, keep.id, drop.id)
            log.info("dedup: merged %r into %r (cos %.3f, name %.3f)", drop.name, keep.name, cos, name_sim)
            return True
    return False


def _record_candidates(
    session: Session, me: KGEntity, judged: list[tuple[str, float, float, KGEntity]]
) -> None:
    """A pending review candidate per pair judged ``candidate`` (once per pair)."""
    for verdict, cos, name_sim, other in judged:
        if verdict != "candidate":
            continue
        a, b = sorted((me.id, other.id))
        exists = session.exec(
            select(KGDedupCandidate).where(
                KGDedupCandidate.entity_a_id == a, KGDedupCandidate.entity_b_id == b
            )
        ).first()
        if exists is not None:
            continue
        try:
            with session.begin_nested():
                session.add(
                    KGDedupCandidate(
                        agent_id=me.agent_id,
                        user_id=me.user_id,
                        entity_a_id=a,
                        entity_b_id=b,
                        cosine=round(cos, 6),
                        name_similarity=round(name_sim, 6),
                    )
                )
        except IntegrityError:
            pass  # recorded concurrently


@hookimpl
def goclaw_consolidation_workers() -> list[Any]:
    return [DedupWorker()]
