"""Cache invalidation for the warm prompt build (issue 3: no database round trips when warm).

Context files, agents, links and teams change rarely and are read on every prompt build, so the
context-file store and the virtual files cache them. Two things invalidate a cache:

* **in-process writes**: a SQLAlchemy ``after_commit`` listener bumps a generation counter
  whenever a committed session wrote a row of a watched table (any ORM write through
  ``engine.db``, whoever made it: ``engine.files``, ``engine.agents.link``, the summoner, ...);
* **other processes** (another CLI, another worker host): a cached entry is trusted for at most
  ``[plugins.bootstrap] cache_seconds`` (default 5 s); ``0`` disables caching.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import event
from sqlmodel import Session

from goclaw.store.models import (
    Agent,
    AgentContextFile,
    AgentLink,
    Team,
    TeamMember,
    UserContextFile,
)

if TYPE_CHECKING:
    from goclaw.engine import Engine

T = TypeVar("T")
WATCHED = (Agent, AgentContextFile, UserContextFile, AgentLink, Team, TeamMember)
_WATCHED_TABLES = frozenset(str(m.__tablename__) for m in WATCHED)
_FLAG = "goclaw_prompt_cache_dirty"


class ChangeTracker:
    """A generation counter for one engine's database plus a small keyed cache."""

    def __init__(self, engine: Engine) -> None:
        self._bind = engine.db.engine
        self.generation = 0
        self._lock = threading.Lock()
        self._cache: dict[Any, tuple[int, float, Any]] = {}
        event.listen(Session, "after_flush", self._after_flush)
        event.listen(Session, "do_orm_execute", self._on_execute)
        event.listen(Session, "after_commit", self._after_commit)
        event.listen(Session, "after_soft_rollback", self._after_rollback)
        engine.on_close(self.close)

    # ------------------------------------------------------------------ listeners
    def _mine(self, session: Session) -> bool:
        bind = session.bind
        return bind is self._bind or getattr(bind, "engine", None) is self._bind

    def _after_flush(self, session: Session, _ctx: Any) -> None:
        if not self._mine(session):
            return
        for obj in (*session.new, *session.dirty, *session.deleted):
            if isinstance(obj, WATCHED):
                session.info[_FLAG] = True
                return

    def _on_execute(self, state: Any) -> None:
        """Bulk ``insert()``/``update()``/``delete()`` statements through a session."""
        if not (state.is_insert or state.is_update or state.is_delete):
            return
        if not self._mine(state.session):
            return
        table = getattr(state.statement, "table", None)
        if getattr(table, "name", None) in _WATCHED_TABLES:
            state.session.info[_FLAG] = True

    def _after_commit(self, session: Session) -> None:
        if session.info.pop(_FLAG, False):
            self.bump()

    def _after_rollback(self, session: Session, _previous: Any) -> None:
        session.info.pop(_FLAG, None)

    def bump(self) -> None:
        """Invalidate every cached entry (called after a committed write)."""
        with self._lock:
            self.generation += 1
            self._cache.clear()

    def close(self) -> None:
        for name, fn in (
            ("after_flush", self._after_flush),
            ("do_orm_execute", self._on_execute),
            ("after_commit", self._after_commit),
            ("after_soft_rollback", self._after_rollback),
        ):
            if event.contains(Session, name, fn):
                event.remove(Session, name, fn)

    # ------------------------------------------------------------------ cache
    def cached(self, key: Any, ttl: float, load: Callable[[], T]) -> T:
        """``load()`` once per generation and per ``ttl`` seconds; ``ttl <= 0`` never caches."""
        if ttl <= 0:
            return load()
        now = time.monotonic()
        hit = self._cache.get(key)
        if hit is not None and hit[0] == self.generation and now - hit[1] < ttl:
            value: T = hit[2]
            return value
        generation = self.generation
        value = load()
        with self._lock:
            if generation == self.generation:  # no write happened while loading
                self._cache[key] = (generation, now, value)
        return value


_TRACKERS: weakref.WeakKeyDictionary[Any, ChangeTracker] = weakref.WeakKeyDictionary()
_TRACKERS_LOCK = threading.Lock()


def tracker(engine: Engine) -> ChangeTracker:
    """The engine's tracker (created on first use)."""
    with _TRACKERS_LOCK:
        found = _TRACKERS.get(engine)
        if found is None:
            found = ChangeTracker(engine)
            _TRACKERS[engine] = found
        return found


def cache_seconds(engine: Engine) -> float:
    """``[plugins.bootstrap] cache_seconds`` (5 s default; the bootstrap plugin may be disabled)."""
    try:
        return float(engine.plugin_settings("bootstrap").cache_seconds)
    except Exception:
        return 5.0
