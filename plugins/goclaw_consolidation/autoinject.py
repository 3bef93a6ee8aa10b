"""Auto-injection of episodic memory into the system prompt (spec §17 "L0 loading").

Once per prompt build (full mode only), the user message is checked against the agent's
episodic index. Trivial messages (greetings, "ok thanks") are skipped. Hits scoring at
least ``auto_inject_threshold`` (0.3) contribute their L0 abstracts, best first, at most
``auto_inject_max_items`` (5), and the whole section is held to ``auto_inject_max_tokens``
(200 tokens = 800 characters, DECISIONS.md units) — the Go code declares but never enforces
that cap; we do. All of these are per agent (``agents.settings``) with the plugin defaults.
"""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select

from goclaw.store.models import SessionMessage
from goclaw.wrappers import neutralise
from goclaw_consolidation import text as T
from goclaw_consolidation.common import log
from goclaw_consolidation.episodic_store import EpisodicStore
from goclaw_consolidation.settings import agent_setting, settings_of

HEADER = "## Memory Context\n\nRelevant memories from past sessions (use memory_search for details):\n"
# Recalled text is data, not instructions: it sits in its own wrapper, and wrapper tags inside
# it are neutralised (goclaw.wrappers, issue 12). The wrapper counts against the budget.
OPEN, CLOSE = "<memory_context>\n", "\n</memory_context>"


def recent_user_turns(engine: Any, session_key: str | None, limit: int = 2) -> str:
    """The last ``limit`` user messages of the session, joined by `` | `` and clipped to 300."""
    if not session_key:
        return ""
    try:
        with engine.db.session() as s:
            rows = s.exec(
                select(SessionMessage.content)
                .where(SessionMessage.session_key == session_key, SessionMessage.role == "user")
                .order_by(col(SessionMessage.seq).desc())
                .limit(limit)
            ).all()
    except Exception:  # the memory plugin may not have recorded anything: no context
        return ""
    joined = " | ".join(" ".join(str(r).split()) for r in reversed(rows))
    return joined[-300:]


def render_memory_context(
    engine: Any, agent: Any, user: str | None, message: str | None, session_key: str | None = None
) -> str:
    """The section text, or ``""`` when disabled, trivial or nothing relevant."""
    if not agent_setting(engine, agent, "auto_inject_enabled") or T.is_trivial(message):
        return ""
    assert message is not None
    threshold = float(agent_setting(engine, agent, "auto_inject_threshold"))
    max_tokens = int(agent_setting(engine, agent, "auto_inject_max_tokens"))
    max_items = settings_of(engine).auto_inject_max_items
    recent = recent_user_turns(engine, session_key)
    vector_query = f"Context: {recent}\nQuery: {message.strip()}" if recent else message
    try:
        results = EpisodicStore(engine).search(
            agent.id, user, message, limit=max_items * 2, min_score=threshold, vector_query=vector_query
        )
    except Exception as exc:  # a prompt must build even when memory search is broken
        log.warning("auto-inject search failed: %s", exc)
        return ""
    budget = max_tokens * 4
    text = HEADER + OPEN
    if len(text) + len(CLOSE) >= budget:
        return ""
    added = 0
    for row, _score in results:
        l0 = neutralise((row.l0_abstract or T.clip(row.summary, 500)).strip())
        if not l0:
            continue
        line = f"- {l0} (memory_expand id: {row.id})\n"  # issue 14: the model can expand it
        room = budget - len(text) - len(CLOSE)
        if len(line) > room:
            if added == 0 and room > 24:
                text += f"- {T.clip(l0, room - 3)}\n"
                added += 1
            break
        text += line
        added += 1
        if added >= max_items:
            break
    return text.rstrip("\n") + CLOSE if added else ""


class MemoryContextSection:
    """Prompt section ``memory_context``, right after Memory Recall (5) in full mode."""

    name = "memory_context"
    order = 5.1
    modes = frozenset({"full"})

    def render(self, ctx: Any) -> str | None:
        request = ctx.request
        return (
            render_memory_context(
                ctx.engine, ctx.agent, ctx.user or None, request.message, request.session_key
            )
            or None
        )
