"""Episodic memory (L1): the ``episodic_summaries`` table and its search.

Rows are unique per ``(agent_id, user_id, source_id)``. Each stores the full summary, the L0
abstract, key topics, an optional embedding (with provider, model and dimension, so models
never mix), its retrieval terms (``lex``) and ``expires_at``. Search runs on the shared retrieval
engine (:mod:`goclaw_episodic.search`): an in-memory index per agent on either
backend; every summary is scored on both channels and fused 0.7 (text) / 0.3 (vector).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, delete
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from goclaw.contracts.agents import find_agent, in_tenant, user_scope
from goclaw.contracts.columns import utcnow
from goclaw.contracts.hooks import SearchHit
from goclaw.contracts.memory import NewEpisode
from goclaw.contracts.providers import embed_texts
from goclaw_episodic import text as T
from goclaw_episodic.search import episode_lex, searcher
from goclaw_episodic.settings import agent_setting
from goclaw_episodic.tables import EpisodicSummary
from goclaw_text.entities import entity_names
from goclaw_text.redaction import redact_for

log = logging.getLogger("goclaw.episodic")

_ROWS: Any = None


def _rows_statement() -> Any:
    global _ROWS
    if _ROWS is None:
        _ROWS = select(EpisodicSummary).where(col(EpisodicSummary.id).in_(bindparam("ids", expanding=True)))
    return _ROWS


class EpisodicStore:
    """``engine.service("episodic")``: create, read, search and prune episodic summaries."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    # ------------------------------------------------------------------ writing
    def build(self, new: NewEpisode, *, redact_text: bool = True) -> EpisodicSummary:
        """A ready-to-insert row: redacted summary, L0 abstract, topics, embedding, expiry."""
        summary = redact_for(self.engine, new.summary) if redact_text else new.summary
        topics = new.key_topics if new.key_topics is not None else entity_names(summary)
        if redact_text:
            # A topic that held a secret is dropped, not kept as a placeholder.
            topics = [t for t in (redact_for(self.engine, t) for t in topics) if "[REDACTED" not in t]
        ttl = new.ttl_days
        if ttl is None:
            ttl = int(agent_setting(self.engine, find_agent(self.engine, new.agent_id), "episodic_ttl_days"))
        now = utcnow()
        row = EpisodicSummary(
            tenant_id=self.engine.settings.tenant_id,
            agent_id=new.agent_id,
            user_id=new.user_id or "",
            session_key=new.session_key,
            summary=summary,
            l0_abstract=T.l0_abstract(summary),
            key_topics=T.dedupe(topics)[: T.MAX_TOPICS],
            lex="",
            source_type=new.source_type,
            source_id=new.source_id,
            turn_count=new.turn_count,
            token_count=new.token_count,
            created_at=now,
            expires_at=now + timedelta(days=ttl) if ttl > 0 else None,
        )
        row.lex = episode_lex(row.summary, row.l0_abstract, row.key_topics)
        emb = embed_texts(self.engine, [summary])
        if emb is not None:
            row.embedding = emb.vectors[0]
            row.embedding_provider, row.embedding_model, row.embedding_dim = emb.provider, emb.model, emb.dim
        return row

    def exists(self, session: Session, agent_id: str, user_id: str, source_id: str) -> EpisodicSummary | None:
        return session.exec(
            select(EpisodicSummary).where(
                EpisodicSummary.agent_id == agent_id,
                EpisodicSummary.user_id == (user_id or ""),
                EpisodicSummary.source_id == source_id,
            )
        ).first()

    def insert(self, row: EpisodicSummary, *, publish: bool = True) -> EpisodicSummary | None:
        """Insert ``row`` and publish ``episodic.created`` in one transaction; ``None`` if the
        ``source_id`` already exists (a replay): nothing is written twice."""

        def _do(session: Session) -> EpisodicSummary | None:
            found, added = self.add(session, row, publish=publish)
            return found if added else None

        try:
            return self.engine.db.run_write(_do)
        except IntegrityError:
            return None
        except Exception as exc:  # StoreError wrapping a unique violation from a racing worker
            if isinstance(exc.__cause__, IntegrityError):
                return None
            raise

    def add(
        self, session: Session, row: EpisodicSummary, *, publish: bool = True
    ) -> tuple[EpisodicSummary, bool]:
        """In the caller's transaction: add ``row`` and publish ``episodic.created``, unless a
        row with its ``source_id`` exists. Returns ``(the row now stored, whether it is new)``."""
        existing = self.exists(session, row.agent_id, row.user_id, row.source_id)
        if existing is not None:
            return existing, False
        session.add(row)
        session.flush()
        if publish and self.engine.has_service("events"):
            self.engine.events.publish(
                session,
                "episodic.created",
                {
                    "episodic_id": row.id,
                    "agent_id": row.agent_id,
                    "user_id": row.user_id,
                    "session_key": row.session_key,
                    "source_id": row.source_id,
                    "source_type": row.source_type,
                },
                agent_id=row.agent_id,
                user_id=row.user_id,
            )
        return row, True

    # ------------------------------------------------------------------ reading
    def get(self, episodic_id: str) -> EpisodicSummary | None:
        with self.engine.db.session() as s:
            return s.get(EpisodicSummary, episodic_id)

    def list(
        self,
        agent_id: str,
        user: str | None = None,
        *,
        limit: int = 50,
        include_expired: bool = False,
        unpromoted_only: bool = False,
        exact_user: bool = False,
        any_tenant: bool = False,
    ) -> list[EpisodicSummary]:
        """Summaries of ``agent_id`` (an agent of this engine's tenant unless ``any_tenant``,
        which only workers handling events of every tenant pass)."""
        if not any_tenant and not in_tenant(self.engine, agent_id):
            return []
        scope = [user or ""] if exact_user else user_scope(user)
        stmt = select(EpisodicSummary).where(
            EpisodicSummary.agent_id == agent_id, col(EpisodicSummary.user_id).in_(scope)
        )
        if not include_expired:
            now = utcnow()
            stmt = stmt.where(
                (col(EpisodicSummary.expires_at).is_(None)) | (col(EpisodicSummary.expires_at) > now)
            )
        if unpromoted_only:
            stmt = stmt.where(col(EpisodicSummary.promoted_at).is_(None))
        stmt = stmt.order_by(col(EpisodicSummary.created_at).desc(), col(EpisodicSummary.id)).limit(limit)
        with self.engine.db.session() as s:
            return list(s.exec(stmt))

    # ------------------------------------------------------------------ search
    def search(
        self,
        agent_id: str,
        user: str | None,
        query: str,
        *,
        limit: int = 10,
        min_score: float = 0.0,
        vector_query: str | None = None,
    ) -> list[tuple[EpisodicSummary, float]]:
        """Hybrid episodic search (:mod:`goclaw_episodic.search`); ``[(row,
        score)]`` best first. Only an agent of this engine's tenant has results;
        an agent without summaries costs one cached check."""
        found = searcher(self.engine).search_rows(
            agent_id, user_scope(user), query, limit=limit, min_score=min_score, vector_query=vector_query
        )
        if not found:
            return []
        rows = self._by_ids([r.id for r, _s in found])
        return [(rows[r.id], s) for r, s in found if r.id in rows]

    def _by_ids(self, ids: list[str]) -> dict[str, EpisodicSummary]:
        """Rows by id through one prepared statement (built once, compiled once: no ORM query
        building per search; ORM loading skips the model constructor)."""
        with self.engine.db.session() as s:
            return {row.id: row for row in s.execute(_rows_statement(), {"ids": ids}).scalars()}

    def hits(
        self, agent_id: str, user: str | None, query: str, limit: int, min_score: float = 0.0
    ) -> list[SearchHit]:
        """Search results as :class:`~goclaw.contracts.hooks.SearchHit` with ``tier="episodic"`` (the
        ``memory_search`` tier: what a hit shows is kept with the search index, no row is read)."""
        return self.hits_for(agent_id, user, query, limit, min_score, None)

    def hits_for(
        self,
        agent_id: str,
        user: str | None,
        query: str,
        limit: int,
        min_score: float,
        query_vector: Any,
        days: tuple[str | None, str | None] | None = None,
    ) -> list[SearchHit]:
        """:meth:`hits`, searching the vectors with ``query_vector`` (the query's embedding by the
        configured embedder) when the caller has it, instead of embedding the query again.
        ``days``: only summaries created from the first to the last ISO day (``None``: open)."""
        found = searcher(self.engine).search_rows(
            agent_id,
            user_scope(user),
            query,
            limit=limit,
            min_score=min_score,
            query_vector=query_vector,
            days=days,
        )
        out: list[SearchHit] = []
        for row, score in found:
            out.append(
                SearchHit(
                    id=row.id,
                    score=min(1.0, score),
                    text=row.text,
                    path=f"episodic:{row.session_key or row.source_id}",
                    scope="user" if row.user_id else "agent",
                    tier="episodic",
                    extra={
                        "episodic_id": row.id,
                        "source_type": row.source_type,
                        "key_topics": list(row.key_topics or []),
                        "created_at": row.created_at.isoformat() if row.created_at else None,
                    },
                )
            )
        return out

    # ------------------------------------------------------------------ retention
    def prune_expired(self, now: datetime | None = None) -> int:
        """Delete episodic rows whose ``expires_at`` has passed."""
        cutoff = now or utcnow()

        def _do(session: Session) -> int:
            result = session.execute(
                delete(EpisodicSummary).where(
                    col(EpisodicSummary.expires_at).is_not(None), col(EpisodicSummary.expires_at) <= cutoff
                )
            )
            return int(getattr(result, "rowcount", 0) or 0)

        return int(self.engine.db.run_write(_do))

    def mark_promoted(self, session: Session, ids: list[str], when: datetime) -> int:
        rows = session.exec(
            select(EpisodicSummary).where(
                col(EpisodicSummary.id).in_(ids), col(EpisodicSummary.promoted_at).is_(None)
            )
        ).all()
        for row in rows:
            row.promoted_at = when
            session.add(row)
        return len(rows)

    def promote(self, ids: list[str], at: datetime | None = None) -> int:
        """Mark these summaries promoted into long-term memory (dreaming); rows already
        promoted keep their time. Returns how many changed."""
        when = at or utcnow()
        return int(self.engine.db.run_write(lambda s: self.mark_promoted(s, list(ids), when)))
