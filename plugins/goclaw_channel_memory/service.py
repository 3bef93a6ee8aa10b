"""Passive channel memory: opt-in per channel, redact first, review by default.

A runtime hands over a channel's pending message group with :meth:`ChannelMemory.ingest`.
Nothing happens unless the channel was enabled (``goclaw channel-memory enable``; stored in
``agents.settings["passive_memory"][channel]``). Messages from excluded users are dropped;
every remaining message is redacted (secrets, tokens, connection strings, card numbers,
emails, phones, plus the channel's excluded patterns) **before** it reaches a model or the
database. Extracted candidates land in ``channel_memory_extraction_items`` as ``pending``;
approving one creates an episodic row with ``source_type='channel'`` and publishes
``episodic.created``, so the semantic and dedup workers treat it like session memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlmodel import Session, col, select

from goclaw.contracts.agents import require_agent
from goclaw.contracts.columns import utcnow
from goclaw.contracts.memory import NewEpisode
from goclaw.contracts.providers import llm_complete
from goclaw.contracts.store import Agent
from goclaw.errors import NotFoundError, ValidationError
from goclaw_channel_memory.settings import settings_of
from goclaw_channel_memory.tables import ChannelMemoryItem
from goclaw_text.replies import parse_json_object

EXTRACT_PROMPT = (
    "From this group chat, extract durable facts, decisions and preferences worth remembering. "
    'Reply with JSON only: {"memories": ["one self-contained sentence", ...]} (at most 5; '
    "an empty list if nothing is worth keeping)."
)


def item_dict(item: ChannelMemoryItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "channel": item.channel,
        "user_id": item.user_id,
        "content": item.content,
        "status": item.status,
        "episodic_id": item.episodic_id,
        "created_at": item.created_at.isoformat() if item.created_at else None,
    }


class ChannelMemory:
    """``engine.service("channel_memory")``."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    # ------------------------------------------------------------------ configuration
    def config(self, agent: str, channel: str) -> dict[str, Any]:
        a = require_agent(self.engine, agent)
        cfg = dict(((a.settings or {}).get("passive_memory") or {}).get(channel) or {})
        return {
            "enabled": bool(cfg.get("enabled", False)),
            "excluded_users": list(cfg.get("excluded_users", [])),
            "excluded_patterns": list(cfg.get("excluded_patterns", [])),
            "auto_approve": bool(cfg.get("auto_approve", False)),
        }

    def configure(
        self,
        agent: str,
        channel: str,
        *,
        enabled: bool | None = None,
        excluded_users: Iterable[str] | None = None,
        excluded_patterns: Iterable[str] | None = None,
        auto_approve: bool | None = None,
    ) -> dict[str, Any]:
        if not channel.strip():
            raise ValidationError("a channel name is required")
        from goclaw_text.redaction import ExcludedPatterns, PatternError

        patterns = list(excluded_patterns) if excluded_patterns is not None else None
        try:
            ExcludedPatterns(patterns or [])  # validates them (syntax, length)
        except PatternError as exc:
            raise ValidationError(str(exc)) from None
        a = require_agent(self.engine, agent)
        cfg = self.config(a.name, channel)
        if enabled is not None:
            cfg["enabled"] = enabled
        if excluded_users is not None:
            cfg["excluded_users"] = sorted(set(excluded_users))
        if patterns is not None:
            cfg["excluded_patterns"] = patterns
        if auto_approve is not None:
            cfg["auto_approve"] = auto_approve
        passive = dict((a.settings or {}).get("passive_memory") or {})
        passive[channel] = cfg
        self.engine.agents.update_settings(a.name, passive_memory=passive)
        return cfg

    # ------------------------------------------------------------------ ingestion
    def ingest(
        self, agent: str, channel: str, messages: Iterable[Mapping[str, Any]], user: str | None = None
    ) -> list[dict[str, Any]]:
        """Extract candidates from one pending-message group; ``[]`` when the channel is off."""
        # Redaction and summaries load on first ingestion: their patterns compile at import.
        from goclaw_text.redaction import redactor_of
        from goclaw_text.summary import extractive_summary

        a = require_agent(self.engine, agent)
        cfg = self.config(a.name, channel)
        if not cfg["enabled"]:
            return []
        redactor = redactor_of(self.engine, cfg["excluded_patterns"])
        excluded = {u.lower() for u in cfg["excluded_users"]}
        lines: list[tuple[str, str]] = []
        for msg in messages:
            who = str(msg.get("user") or msg.get("sender") or "")
            if who.lower() in excluded:
                continue
            body = redactor.redact(str(msg.get("text") or msg.get("content") or "")).strip()
            if body:
                lines.append((redactor.redact(who) or "someone", body))
        if not lines:
            return []
        chat = "\n".join(f"{who}: {body}" for who, body in lines)
        candidates: list[str] = []
        reply = llm_complete(
            self.engine,
            [{"role": "system", "content": EXTRACT_PROMPT}, {"role": "user", "content": chat}],
            timeout=settings_of(self.engine).llm_timeout_seconds,
        )
        data = parse_json_object(reply) if reply else None
        if data and isinstance(data.get("memories"), list):
            candidates = [str(m).strip() for m in data["memories"] if str(m).strip()][:5]
        if not candidates and not data:
            summary = extractive_summary([("user", f"{who}: {body}") for who, body in lines])
            if summary:
                candidates = [f"In channel {channel}: {summary}"]
        # The model saw redacted text, but its output is redacted again before storage.
        candidates = [redactor.redact(c) for c in candidates]

        def _do(session: Session) -> list[ChannelMemoryItem]:
            items = [
                ChannelMemoryItem(agent_id=a.id, channel=channel, user_id=user or "", content=c)
                for c in candidates
            ]
            for item in items:
                session.add(item)
            session.flush()
            return items

        items = self.engine.db.run_write(_do)
        if cfg["auto_approve"]:
            return [self.approve(int(i.id)) for i in items if i.id is not None]
        return [item_dict(i) for i in items]

    # ------------------------------------------------------------------ review
    def items(
        self, agent: str | None = None, channel: str | None = None, status: str | None = None
    ) -> list[dict[str, Any]]:
        stmt = select(ChannelMemoryItem)
        if agent:
            stmt = stmt.where(ChannelMemoryItem.agent_id == require_agent(self.engine, agent).id)
        else:  # this tenant's agents only: another tenant's items stay invisible
            tenant_agents = select(Agent.id).where(Agent.tenant_id == self.engine.settings.tenant_id)
            stmt = stmt.where(col(ChannelMemoryItem.agent_id).in_(tenant_agents))
        if channel:
            stmt = stmt.where(ChannelMemoryItem.channel == channel)
        if status:
            stmt = stmt.where(ChannelMemoryItem.status == status)
        with self.engine.db.session() as s:
            return [item_dict(i) for i in s.exec(stmt.order_by(col(ChannelMemoryItem.id)))]

    def _pending_item(self, session: Session, item_id: int) -> ChannelMemoryItem:
        """Item ``item_id`` of this tenant, still pending (else a one-line error)."""
        item = session.get(ChannelMemoryItem, item_id)
        agent = session.get(Agent, item.agent_id) if item is not None else None
        if item is None or agent is None or agent.tenant_id != self.engine.settings.tenant_id:
            raise NotFoundError(f"unknown channel memory item {item_id}")
        if item.status != "pending":
            raise ValidationError(f"item {item_id} is already {item.status}")
        return item

    def approve(self, item_id: int) -> dict[str, Any]:
        """Approve a pending item: an episodic row (``source_type='channel'``) + ``episodic.created``."""
        store = self.engine.episodic  # goclaw.episodic (FeatureUnavailableError when disabled)
        with self.engine.db.session() as s:
            item = self._pending_item(s, item_id)
        row = store.build(
            NewEpisode(
                agent_id=item.agent_id,
                user_id=item.user_id,
                session_key=f"channel:{item.channel}",
                summary=item.content,
                source_id=f"channel:{item.channel}:{item.id}",
                source_type="channel",
                turn_count=1,
                token_count=len(item.content) // 4,
            ),
            redact_text=True,
        )

        def _do(session: Session) -> dict[str, Any]:
            current = self._pending_item(session, item_id)  # still pending (a racing review)
            stored, _new = store.add(session, row)
            current.status, current.reviewed_at = "approved", utcnow()
            current.episodic_id = stored.id
            session.add(current)
            return item_dict(current)

        return self.engine.db.run_write(_do)

    def reject(self, item_id: int) -> dict[str, Any]:
        def _do(session: Session) -> dict[str, Any]:
            item = self._pending_item(session, item_id)
            item.status, item.reviewed_at = "rejected", utcnow()
            session.add(item)
            return item_dict(item)

        return self.engine.db.run_write(_do)
