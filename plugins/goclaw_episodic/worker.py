"""Plugin ``goclaw.workers.episodic``: the EpisodicWorker, the first consolidation step.

On ``run.completed``: dedup by ``source_id = session_key:compaction_count``, with
``:r<run>`` appended from a key's second run on, so every run of a re-used key gets its own
summary (``engine.sessions.end`` numbers the runs and names each run's messages, ``first_seq..last_seq``);
summary = the compaction summary in the event when there is one, else the LLM over the
session's messages, else an extractive fallback; then L0 abstract, key topics, embedding and
expiry; insert and publish ``episodic.created`` in one transaction. A replay finds the
``source_id`` and does nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from goclaw import hookimpl
from goclaw.contracts.agents import find_agent
from goclaw.contracts.providers import llm_complete
from goclaw.errors import NotFoundError
from goclaw_episodic.settings import agent_setting, settings_of
from goclaw_episodic.store import EpisodicStore, NewEpisode
from goclaw_text.redaction import redactor_of
from goclaw_text.sentences import clip
from goclaw_text.summary import extractive_summary

log = logging.getLogger("goclaw.episodic")

SUMMARY_PROMPT = (
    "You write episodic memory for an AI assistant. Summarise the conversation below in 2-4 short "
    "paragraphs. The first sentence must stand alone as an abstract of what the session was about "
    "(at least 20 characters). Keep decisions, preferences, facts, names, dates and open tasks. "
    "No preamble, no markdown headings."
)
MAX_MESSAGE_CHARS = 500
MAX_TRANSCRIPT_CHARS = 8000


def session_messages(
    engine: Any, key: str, first_seq: int | None = None, last_seq: int | None = None
) -> tuple[Any | None, list[tuple[str, str, int]]]:
    """The session and its ``(role, content, token_count)`` messages in order (those of
    ``first_seq..last_seq`` when given: one run of the key), read through the ``sessions``
    service (goclaw.memory's): ``(None, [])`` when it is off or the key is unknown, and the
    event's own summary, if any, is all there is to consolidate."""
    if not engine.has_service("sessions"):
        return None, []
    try:
        row = engine.sessions.get(key)
    except NotFoundError:
        return None, []
    msgs = [
        m
        for m in engine.sessions.messages(key, include_compacted=True)
        if (first_seq is None or m.seq >= first_seq) and (last_seq is None or m.seq <= last_seq)
    ]
    return row, [(m.role, m.content, m.token_count) for m in msgs]


def _seq(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def run_source_id(key: str, compaction: int, run: Any) -> str:
    """``session_key:compaction_count``; a key's later runs add ``:r<run>``, so each is summarised."""
    number = _seq(run)
    return f"{key}:{compaction}" if number is None or number <= 1 else f"{key}:{compaction}:r{number}"


def transcript(messages: list[tuple[str, str]]) -> str:
    parts: list[str] = []
    total = 0
    for role, content in messages:
        line = f"{role}: {clip(' '.join(content.split()), MAX_MESSAGE_CHARS)}"
        if total + len(line) > MAX_TRANSCRIPT_CHARS:
            parts.append("...(truncated)")
            break
        parts.append(line)
        total += len(line) + 1
    return "\n".join(parts)


def summarise(engine: Any, messages: list[tuple[str, str]]) -> tuple[str, str]:
    """``(summary, method)``: the LLM's summary, else the extractive fallback."""
    if not messages:
        return "", "none"
    timeout = settings_of(engine).llm_timeout_seconds
    reply = llm_complete(
        engine,
        [{"role": "system", "content": SUMMARY_PROMPT}, {"role": "user", "content": transcript(messages)}],
        timeout=timeout,
        max_tokens=1024,
    )
    if reply:
        return reply, "llm"
    return extractive_summary(messages), "extractive"


class EpisodicWorker:
    name = "episodic"
    event_types = frozenset({"run.completed"})

    def handle(self, event: Any, engine: Any) -> None:
        if not engine.has_service("episodic"):  # goclaw.episodic is off: its tables may not exist
            return
        payload = dict(event.payload)
        key = str(payload.get("session_key") or "")
        if not key:
            log.warning("run.completed event %s has no session_key; skipped", event.id)
            return
        session_row, messages = session_messages(
            engine, key, _seq(payload.get("first_seq")), _seq(payload.get("last_seq"))
        )
        agent = find_agent(
            engine,
            str(payload.get("agent_id") or event.agent_id or (session_row.agent_id if session_row else "")),
        )
        if agent is None:
            log.warning("run.completed event %s: unknown agent; skipped", event.id)
            return
        if not agent_setting(engine, agent, "consolidation_enabled"):
            return
        user_id = str(
            payload.get("user_id") or event.user_id or (session_row.user_id if session_row else "") or ""
        )
        compaction = int(
            payload.get("compaction_count") or (session_row.compaction_count if session_row else 0)
        )
        source_id = run_source_id(key, compaction, payload.get("run"))
        store = EpisodicStore(engine)
        with engine.db.session() as s:
            if store.exists(s, agent.id, user_id, source_id) is not None:
                return  # replay: already consolidated
        chat = [(r, c) for r, c, _ in messages if r in ("user", "assistant") and c.strip()]
        summary = str(payload.get("summary") or "").strip()
        redact_text = settings_of(engine).redact
        if redact_text:
            # Each message is redacted whole, before anything is summarised or extracted from
            # it: "my password is X" marks X as a secret, X alone in a summary or a topic does
            # not. The model never sees the secret either.
            redactor = redactor_of(engine)
            chat = [(r, redactor.redact(c)) for r, c in chat]
            summary = redactor.redact(summary)
        method = "compaction"
        if not summary:
            summary, method = summarise(engine, chat)
        later_run = (_seq(payload.get("run")) or 1) > 1  # the row's summary is an earlier run's
        if not summary and not later_run and session_row is not None and session_row.summary.strip():
            summary, method = session_row.summary.strip(), "session"
        if not summary:
            log.info("session %s has nothing to summarise; skipped", key)
            return
        tokens = sum(t for _, _, t in messages) or sum(len(c) for _, c in chat) // 4
        row = store.build(
            NewEpisode(
                agent_id=agent.id,
                user_id=user_id,
                session_key=key,
                summary=summary,
                source_id=source_id,
                turn_count=len(chat),
                token_count=tokens,
                ttl_days=int(agent_setting(engine, agent, "episodic_ttl_days")),
            ),
            redact_text=redact_text,
        )
        if store.insert(row) is not None:
            log.info("episodic summary %s for %s (%s)", row.id, source_id, method)


@hookimpl
def goclaw_consolidation_workers() -> list[Any]:
    return [EpisodicWorker()]
