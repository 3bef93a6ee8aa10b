"""``engine.sessions``: working memory for runtimes, with compaction and the flush.

A runtime records each turn with :meth:`SessionService.append`; tokens are counted by the
engine's tokenizer (``engine.tokenizer``: o200k by default, characters / 4 as the fallback).
:meth:`SessionService.maintain` applies the policy after a turn: the memory flush when the
history reaches ``context_window - reserve_tokens_floor - soft_threshold_tokens``, and a
compaction when it exceeds ``context_window × max_history_share``.
:meth:`SessionService.compact` always runs the flush first (the threshold alone can miss it
when history is compacted for other reasons), at most once per compaction cycle
(``sessions.flushed_cycle`` records the cycle whose flush ran; ``compaction_count`` is the
cycle), then summarises the older turns
(LLM, or an extractive fallback) into ``sessions.summary`` and marks them compacted.
:meth:`SessionService.end` publishes ``run.completed`` for the consolidation pipeline.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlmodel import col, func, select

from goclaw.contracts.columns import utcnow
from goclaw.errors import NotFoundError, ValidationError
from goclaw_memory.flush import FlushResult, run_flush
from goclaw_memory.paths import validate_user_id
from goclaw_memory.tables import Session, SessionMessage
from goclaw_text.redaction import redact_for

if TYPE_CHECKING:
    from sqlmodel import Session as DbSession

    from goclaw.contracts.host import Host
    from goclaw.contracts.store import Agent
    from goclaw_memory.settings import MemorySettings

log = logging.getLogger(__name__)

ROLES = ("user", "assistant", "system", "tool")
SUMMARY_LIMIT = 4_000  # characters kept in an extractive summary


def estimate_tokens(text: str) -> int:
    """Tokens as characters / 4, rounded up."""
    return (len(text) + 3) // 4


@dataclass
class CompactResult:
    session_key: str
    compacted: int  # messages marked compacted by this call (0 = nothing to do)
    compaction_count: int  # the cycle number after this call
    flush: FlushResult | None  # None when the cycle's flush had already run
    summary: str
    summary_method: str  # llm | extractive | none


def _create_if_missing(s: DbSession, key: str, agent_id: str, user_id: str) -> None:
    """Create the session row unless it exists. INSERT ... ON CONFLICT DO NOTHING: two first
    appends to one new key at once must not both try a plain INSERT (on PostgreSQL one of
    them would fail with a duplicate key); the row is locked by the SELECT that follows."""
    from goclaw_memory.index_writes import dialect_insert

    table = Session.__table__  # type: ignore[attr-defined]
    now = utcnow()
    stmt = dialect_insert(s, table).values(
        key=key,
        agent_id=agent_id,
        user_id=user_id,
        status="open",
        compaction_count=0,
        flushed_cycle=-1,
        summary="",
        created_at=now,
        updated_at=now,
    )
    s.execute(stmt.on_conflict_do_nothing(index_elements=[table.c.key]))


RUNS_WORKER = "sessions.runs"  # worker_state rows: the last ended run of each session key


def _close_run(s: DbSession, row: Session) -> dict[str, Any]:
    """Number the run that ``end`` closes, so every run of a re-used key is consolidated.

    A run is the messages appended since the previous ``end``. Ending again with no new message
    closes the same run again (same number, so the same episodic ``source_id``: idempotent).
    State lives in ``worker_state`` under :data:`RUNS_WORKER`, written in ``end``'s transaction.
    """
    from goclaw.contracts.store import WorkerState

    last_seq = int(
        s.exec(select(func.max(SessionMessage.seq)).where(SessionMessage.session_key == row.key)).one() or 0
    )
    state = s.exec(
        select(WorkerState).where(WorkerState.worker == RUNS_WORKER, WorkerState.scope == row.key)
    ).first()
    prev: dict[str, Any] = dict(state.value) if state is not None else {}
    if prev and int(prev.get("last_seq", -1)) == last_seq:
        return {**prev, "compacted": bool(prev.get("compacted"))}  # the same run, ended again
    start_count = int(prev.get("compaction_count", 0))
    run = {
        "run": int(prev.get("run", 0)) + 1,
        "first_seq": int(prev.get("last_seq", 0)) + 1,
        "last_seq": last_seq,
        "compaction_count": row.compaction_count,
        "compacted": row.compaction_count > start_count,
    }
    if state is None:
        state = WorkerState(worker=RUNS_WORKER, scope=row.key, value=run)
    else:
        state.value = run
        state.updated_at = utcnow()
    s.add(state)
    return run


class SessionService:
    def __init__(self, engine: Host) -> None:
        self.engine = engine

    @property
    def settings(self) -> MemorySettings:
        settings: MemorySettings = self.engine.plugin_settings("memory")
        return settings

    # ------------------------------------------------------------------ recording
    def append(
        self, agent: str | Agent, key: str, role: str, content: str, user: str | None = None
    ) -> SessionMessage:
        """Record one message; creates the session on first use (and re-opens an ended one)."""
        if not key:
            raise ValidationError("a session key is required")
        if role not in ROLES:
            raise ValidationError(f"invalid role {role!r}: use {', '.join(ROLES)}")
        a = self.engine.agents.get(agent) if isinstance(agent, str) else agent
        user_id = validate_user_id(user) if user else ""
        tokens = self.engine.tokenizer.count(content)  # outside the write transaction

        def _do(s: DbSession) -> SessionMessage:
            _create_if_missing(s, key, a.id, user_id)
            row = s.exec(select(Session).where(Session.key == key).with_for_update()).one()
            if row.agent_id != a.id or row.user_id != user_id:
                raise ValidationError(f"session {key!r} belongs to another agent or user")
            seq = s.exec(select(func.max(SessionMessage.seq)).where(SessionMessage.session_key == key)).one()
            msg = SessionMessage(
                session_key=key,
                seq=int(seq or 0) + 1,
                role=role,
                content=content,
                token_count=tokens,
            )
            s.add(msg)
            row.status = "open"
            row.updated_at = utcnow()
            s.add(row)
            s.flush()
            return msg

        return self.engine.db.run_write(_do)

    def get(self, key: str) -> Session:
        with self.engine.db.session() as s:
            row = s.get(Session, key)
        if row is None:
            raise NotFoundError(f"unknown session {key!r}")
        return row

    def messages(self, key: str, *, include_compacted: bool = False) -> list[SessionMessage]:
        self.get(key)
        with self.engine.db.session() as s:
            stmt = select(SessionMessage).where(SessionMessage.session_key == key)
            if not include_compacted:
                stmt = stmt.where(SessionMessage.compacted == False)  # noqa: E712
            return list(s.exec(stmt.order_by(SessionMessage.seq)))

    def recent_messages(self, key: str, *, limit: int, role: str | None = None) -> list[SessionMessage]:
        with self.engine.db.session() as s:
            stmt = select(SessionMessage).where(SessionMessage.session_key == key)
            if role is not None:
                stmt = stmt.where(SessionMessage.role == role)
            rows = list(s.exec(stmt.order_by(col(SessionMessage.seq).desc()).limit(limit)))
        return rows[::-1]

    def tokens(self, key: str) -> int:
        """Tokens of the live history: the summary plus the messages not yet compacted."""
        row = self.get(key)
        return self.engine.tokenizer.count(row.summary) + sum(m.token_count for m in self.messages(key))

    # ------------------------------------------------------------------ policy
    def flush_threshold(self) -> int:
        cfg = self.settings
        return max(0, cfg.context_window - cfg.flush.reserve_tokens_floor - cfg.flush.soft_threshold_tokens)

    def compaction_threshold(self) -> int:
        cfg = self.settings
        return int(cfg.context_window * cfg.max_history_share)

    def maintain(self, key: str) -> dict[str, Any]:
        """After a turn: flush at the threshold, compact above the compaction trigger."""
        tokens = self.tokens(key)
        out: dict[str, Any] = {"tokens": tokens, "flush": None, "compaction": None}
        if tokens >= self.flush_threshold():
            out["flush"] = self.flush(key)
        if tokens > self.compaction_threshold():
            out["compaction"] = self.compact(key)
        return out

    # ------------------------------------------------------------------ flush
    def _claim_flush(self, key: str) -> bool:
        """Mark this cycle's flush as taken; False when it already ran (once per cycle)."""

        def _do(s: DbSession) -> bool:
            row = s.exec(select(Session).where(Session.key == key).with_for_update()).first()
            if row is None:
                raise NotFoundError(f"unknown session {key!r}")
            if row.flushed_cycle == row.compaction_count:
                return False
            row.flushed_cycle = row.compaction_count
            s.add(row)
            return True

        return self.engine.db.run_write(_do)

    def flush(self, key: str, *, messages: list[SessionMessage] | None = None) -> FlushResult | None:
        """Run the memory flush for the current cycle, unless it already ran (then ``None``)."""
        if not self.settings.flush.enabled:
            return None
        row = self.get(key)
        turns = messages if messages is not None else self.messages(key)
        if not turns or not self._claim_flush(key):
            return None
        agent = self.engine.agents.get(row.agent_id)
        return run_flush(self.engine, agent, row.user_id, key, turns, row.summary, self.settings.flush)

    # ------------------------------------------------------------------ compaction
    def compact(self, key: str, *, keep_last: int | None = None) -> CompactResult:
        """Flush (once per cycle), summarise the older turns, mark them compacted."""
        keep = self.settings.keep_last if keep_last is None else max(0, keep_last)
        row = self.get(key)
        live = self.messages(key)
        old = live[: len(live) - keep] if keep else live
        if not old:
            return CompactResult(key, 0, row.compaction_count, None, row.summary, "none")
        flush = self.flush(key, messages=old)
        summary, method = self._summarise(row.summary, old)
        summary = redact_for(self.engine, summary)  # the summary is stored: redact it first
        ids = [m.id for m in old]
        cycle = row.compaction_count

        def _do(s: DbSession) -> int:
            current = s.exec(select(Session).where(Session.key == key).with_for_update()).one()
            if current.compaction_count != cycle:
                return -1  # another process compacted this cycle meanwhile
            for m in s.exec(select(SessionMessage).where(SessionMessage.id.in_(ids))):  # type: ignore[union-attr]
                m.compacted = True
                s.add(m)
            current.summary = summary
            current.compaction_count = cycle + 1
            current.updated_at = utcnow()
            s.add(current)
            return current.compaction_count

        count = self.engine.db.run_write(_do)
        if count < 0:
            latest = self.get(key)
            return CompactResult(key, 0, latest.compaction_count, flush, latest.summary, "none")
        return CompactResult(key, len(old), count, flush, summary, method)

    def _summarise(self, previous: str, turns: list[SessionMessage]) -> tuple[str, str]:
        transcript = "\n".join(f"{m.role}: {m.content}" for m in turns)
        try:
            llm = self.engine.llm()
        except Exception:
            llm = None
        if llm is not None:
            prompt = (
                "Summarise this conversation for the assistant's own future reference: keep "
                "decisions, open tasks, facts about the user and anything needed to continue. "
                "Be concise.\n\n"
                + (f"[Previous summary]\n{previous}\n\n" if previous else "")
                + f"[Conversation]\n{transcript}"
            )
            try:
                text = llm.complete([{"role": "user", "content": prompt}], timeout=60.0).strip()
                if text:
                    return text, "llm"
            except Exception as exc:
                log.info("compaction summary by LLM failed, using the extractive summary: %s", exc)
        lines = [previous.strip()] if previous.strip() else []
        for m in turns:
            if m.role in ("user", "assistant"):
                flat = " ".join(m.content.split())
                lines.append(f"- {m.role}: {flat[:200]}{'...' if len(flat) > 200 else ''}")
        text = "\n".join(lines)
        if len(text) > SUMMARY_LIMIT:
            text = "...\n" + text[-SUMMARY_LIMIT:]
        return text, "extractive"

    # ------------------------------------------------------------------ end
    def end(self, key: str) -> Session:
        """Close the run; publish ``run.completed`` in the same transaction."""

        def _do(s: DbSession) -> Session:
            row = s.exec(select(Session).where(Session.key == key).with_for_update()).first()
            if row is None:
                raise NotFoundError(f"unknown session {key!r}")
            row.status = "ended"
            row.updated_at = utcnow()
            s.add(row)
            run = _close_run(s, row)
            # The kernel's event queue exists whatever plugins are disabled: publish unconditionally.
            payload = {
                "session_key": row.key,
                "compaction_count": row.compaction_count,
                "agent_id": row.agent_id,
                "user_id": row.user_id,
                # The compaction summary only when this run compacted: a later run of the
                # key must not be consolidated as the earlier run's summary again.
                "summary": row.summary if run["compacted"] else "",
                "run": run["run"],
                "first_seq": run["first_seq"],
                "last_seq": run["last_seq"],
            }
            self.engine.events.publish(
                s, "run.completed", payload, agent_id=row.agent_id, user_id=row.user_id
            )
            s.flush()
            return row

        return self.engine.db.run_write(_do)
