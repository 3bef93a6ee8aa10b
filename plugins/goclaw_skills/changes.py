"""Knowing when the managed store changed without a query per prompt build.

Two things say the database side of skills may have changed: a committed in-process write to
``skills``, ``skill_versions``, the grant tables or ``system_configs`` (a SQLAlchemy session
listener bumps :attr:`DbChanges.generation`), and, for writes by other processes, age: a
checked value is trusted for at most ``[plugins.skills] db_check_seconds`` (0 = check on
every use). So a warm prompt build makes no skills query at all.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import event
from sqlmodel import Session

from goclaw.store.models import Skill, SkillAgentGrant, SkillUserGrant, SkillVersion, SystemConfig

if TYPE_CHECKING:
    from goclaw.engine import Engine

T = TypeVar("T")
WATCHED = (Skill, SkillVersion, SkillAgentGrant, SkillUserGrant, SystemConfig)
_FLAG = "goclaw_skills_dirty"


class DbChanges:
    def __init__(self, engine: Engine, ttl: Callable[[], float]) -> None:
        self._bind = engine.db.engine
        self._ttl = ttl
        self.generation = 0
        self._lock = threading.Lock()
        self._values: dict[str, tuple[int, float, Any]] = {}
        event.listen(Session, "after_flush", self._after_flush)
        event.listen(Session, "after_commit", self._after_commit)
        event.listen(Session, "after_soft_rollback", self._after_rollback)

    def _after_flush(self, session: Session, _ctx: Any) -> None:
        bind = session.bind
        if bind is not self._bind and getattr(bind, "engine", None) is not self._bind:
            return
        if any(isinstance(o, WATCHED) for o in (*session.new, *session.dirty, *session.deleted)):
            session.info[_FLAG] = True

    def _after_commit(self, session: Session) -> None:
        if session.info.pop(_FLAG, False):
            self.bump()

    def _after_rollback(self, session: Session, _previous: Any) -> None:
        session.info.pop(_FLAG, None)

    def bump(self) -> None:
        with self._lock:
            self.generation += 1
            self._values.clear()

    def get(self, key: str, load: Callable[[], T]) -> T:
        """``load()``, reused until an in-process write or ``db_check_seconds`` pass."""
        ttl = self._ttl()
        now = time.monotonic()
        hit = self._values.get(key)
        if ttl > 0 and hit is not None and hit[0] == self.generation and now - hit[1] < ttl:
            value: T = hit[2]
            return value
        generation = self.generation
        value = load()
        with self._lock:
            if generation == self.generation:
                self._values[key] = (generation, now, value)
        return value

    def close(self) -> None:
        for name, fn in (
            ("after_flush", self._after_flush),
            ("after_commit", self._after_commit),
            ("after_soft_rollback", self._after_rollback),
        ):
            if event.contains(Session, name, fn):
                event.remove(Session, name, fn)
