"""Plugin ``goclaw.workers.dreaming``: the DreamingWorker, the last consolidation step.

On ``episodic.created`` for ``(agent, user)``:

* fewer than ``dreaming_threshold`` (5) unpromoted, unexpired summaries → nothing to do;
* a run for this scope less than ``dreaming_debounce_seconds`` (600) ago → the event is
  deferred to the end of the window (a trailing debounce: the last episodes of a burst are
  still consolidated, and at most one run per window happens, across processes: the window
  is claimed under a row lock in ``worker_state``);
* otherwise take the oldest ≤ ``dreaming_batch`` (10) unpromoted summaries, synthesise them
  (LLM, else a deterministic digest), append a section to the dated memory document
  ``<memory folder>/memory/dreams/YYYY-MM-DD.md`` (atomic write), index it, and mark those
  summaries promoted. The section carries the ids it consolidates, so a replay after a
  crash never writes it twice; promotion only touches rows still unpromoted.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session

from goclaw import hookimpl
from goclaw.contracts.agents import find_agent
from goclaw.contracts.columns import utcnow
from goclaw.contracts.events import DeferEvent
from goclaw.contracts.fsutil import atomic_write_text
from goclaw.contracts.providers import llm_complete
from goclaw.contracts.store import WorkerState
from goclaw.errors import PermissionDeniedError
from goclaw_episodic.settings import agent_setting, settings_of
from goclaw_episodic.store import EpisodicStore
from goclaw_episodic.tables import EpisodicSummary
from goclaw_text.redaction import redact_for
from goclaw_text.sentences import clip

log = logging.getLogger("goclaw.episodic")

DREAM_PROMPT = (
    "You consolidate an assistant's episodic memories into long-term memory. From the session "
    "summaries below, write concise Markdown bullet points: durable facts, preferences, decisions, "
    "recurring themes and open threads. No preamble, no headings."
)
_MARKER = re.compile(r"<!-- goclaw:dream ids=([0-9a-f,]+) -->")


def dream_path(engine: Any, agent: Any, user_id: str, when: datetime) -> Path:
    base = engine.agent_dir(agent)
    if user_id:
        if (base / "users").is_symlink() or (base / "users" / user_id).is_symlink():
            # writing through it would put this user's dreams in another user's memory
            raise PermissionDeniedError(f"user {user_id!r}: its folder is a symlink (symlinked user folder)")
        base = base / "users" / user_id
    return base / settings_of(engine).dreaming_dir / f"{when:%Y-%m-%d}.md"


def fallback_synthesis(rows: list[EpisodicSummary]) -> str:
    topics = Counter(t for r in rows for t in (r.key_topics or []))
    lines = [f"- {r.l0_abstract or clip(r.summary, 200)}" for r in rows]
    recurring = [t for t, n in topics.most_common(8) if n >= 2] or [t for t, _ in topics.most_common(5)]
    if recurring:
        lines.append(f"- Recurring topics: {', '.join(recurring)}")
    return "\n".join(lines)


def synthesise(engine: Any, rows: list[EpisodicSummary]) -> tuple[str, str]:
    joined = "\n---\n".join(f"[{r.created_at:%b %d}] {r.summary}" for r in rows)
    reply = llm_complete(
        engine,
        [{"role": "system", "content": DREAM_PROMPT}, {"role": "user", "content": joined[:24000]}],
        timeout=settings_of(engine).llm_timeout_seconds,
        max_tokens=4096,
    )
    if reply:
        return redact_for(engine, reply), "llm"
    return fallback_synthesis(rows), "digest"


class DreamingWorker:
    name = "dreaming"
    event_types = frozenset({"episodic.created"})

    def handle(self, event: Any, engine: Any) -> None:
        cfg = settings_of(engine)
        if not cfg.dreaming_enabled or not engine.has_service("episodic"):  # goclaw.episodic off
            return
        agent_id = str(event.payload.get("agent_id") or event.agent_id)
        user_id = str(event.payload.get("user_id") or event.user_id or "")
        agent = find_agent(engine, agent_id)
        if agent is None or not agent_setting(engine, agent, "consolidation_enabled"):
            return
        store = EpisodicStore(engine)
        pending = store.list(
            agent.id, user_id, limit=10_000, unpromoted_only=True, exact_user=True, any_tenant=True
        )
        if len(pending) < cfg.dreaming_threshold:
            return
        scope = f"{agent.id}:{user_id}"
        wait = engine.db.run_write(lambda s: self._claim_window(s, scope, cfg.dreaming_debounce_seconds))
        if wait > 0:
            raise DeferEvent(wait + 1.0, f"dreaming ran less than {cfg.dreaming_debounce_seconds:.0f}s ago")
        batch = sorted(pending, key=lambda r: (r.created_at, r.id))[: cfg.dreaming_batch]
        self.dream(engine, agent, user_id, batch)

    @staticmethod
    def _claim_window(session: Session, scope: str, debounce: float) -> float:
        """Seconds left in the current window (0 = the window is ours and now stamped)."""
        now = utcnow()
        state = session.get(WorkerState, ("dreaming", scope), with_for_update=True)
        if state is not None:
            last = state.value.get("last_run")
            if isinstance(last, str):
                elapsed = (now - datetime.fromisoformat(last)).total_seconds()
                if elapsed < debounce:
                    return max(0.001, debounce - elapsed)
            state.value = {**state.value, "last_run": now.isoformat()}
            state.updated_at = now
        else:
            state = WorkerState(worker="dreaming", scope=scope, value={"last_run": now.isoformat()})
        session.add(state)
        return 0.0

    def dream(self, engine: Any, agent: Any, user_id: str, batch: list[EpisodicSummary]) -> Path:
        now = utcnow()
        ids = sorted(r.id for r in batch)
        path = dream_path(engine, agent, user_id, now)
        existing = path.read_text(encoding="utf-8") if path.exists() else ""
        already = any(set(m.group(1).split(",")) == set(ids) for m in _MARKER.finditer(existing))
        if not already:
            body, method = synthesise(engine, batch)
            head = (
                existing or f"# Dreams {now:%Y-%m-%d}\n\nLong-term memory consolidated from past sessions.\n"
            )
            section = (
                f"\n## {now:%H:%M} UTC: {len(batch)} sessions ({method})\n"
                f"<!-- goclaw:dream ids={','.join(ids)} -->\n\n{body.strip()}\n"
            )
            atomic_write(path, head.rstrip("\n") + "\n" + section)
        if engine.has_service("memory"):
            try:
                engine.memory.index(agent, user_id or None)
            except Exception as exc:  # the file is written; the next index run picks it up
                log.warning("dreaming: indexing %s failed: %s", path, exc)
        store = EpisodicStore(engine)
        promoted = engine.db.run_write(lambda s: store.mark_promoted(s, ids, now))
        log.info("dreaming: %d summaries promoted into %s", promoted, path)
        return path


@hookimpl
def goclaw_consolidation_workers() -> list[Any]:
    return [DreamingWorker()]


def atomic_write(path: Path, content: str) -> None:
    """Write ``content`` to ``path`` atomically (:func:`goclaw.contracts.fsutil.atomic_write_text`).
    Memory is personal data: a new file is private (0600), its new folder too (0700)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    atomic_write_text(path, content, mode=None if path.exists() else 0o600)
