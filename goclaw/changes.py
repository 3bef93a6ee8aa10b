"""Caches invalidated by committed writes: a warm prompt build makes no database round trip.

Context files, agents, links, teams, skills and grants change rarely but are read on every
prompt build. A :class:`ChangeTracker` watches a set of tables for one engine's database and
keeps a small keyed cache. Two things invalidate it:

* **in-process writes**: SQLAlchemy session listeners flag a session that flushed (ORM) or
  executed (bulk ``insert``/``update``/``delete``) a watched table, and bump the generation
  when that session commits; a rollback clears the flag;
* **other processes** (another CLI, another worker host): an entry is trusted for at most the
  ``ttl`` the caller passes (each plugin makes it configurable; ``0`` = never cache).

Get one with :meth:`goclaw.Engine.change_tracker`; it is removed when the engine closes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from sqlalchemy import Engine as SAEngine
from sqlalchemy import event
from sqlmodel import Session

T = TypeVar("T")


class ChangeTracker:
    """A generation counter for writes to ``watched`` tables, plus a keyed cache."""

    def __init__(self, bind: SAEngine, watched: Iterable[type[Any]], name: str) -> None:
        self._bind = bind
        self._models = tuple(watched)
        self._tables = frozenset(str(getattr(m, "__tablename__", "")) for m in self._models)
        # One flag per tracker: two engines in one process (tests, an app with two workspaces)
        # may both have a "skills" tracker, and every tracker's listener sees every session.
        self._flag = f"goclaw_changes_{name}_{id(self):x}"
        self.generation = 0
        self._lock = threading.Lock()
        self._cache: dict[Any, tuple[int, float, Any]] = {}
        self._listeners: tuple[tuple[str, Callable[..., None]], ...] = (
            ("after_flush", self._after_flush),
            ("do_orm_execute", self._on_execute),
            ("after_commit", self._after_commit),
            ("after_soft_rollback", self._after_rollback),
        )
        for event_name, fn in self._listeners:
            event.listen(Session, event_name, fn)

    # ------------------------------------------------------------------ listeners
    def _mine(self, session: Session) -> bool:
        bind = session.bind
        return bind is self._bind or getattr(bind, "engine", None) is self._bind

    def _after_flush(self, session: Session, _ctx: Any) -> None:
        if not self._mine(session):
            return
        if any(isinstance(o, self._models) for o in (*session.new, *session.dirty, *session.deleted)):
            session.info[self._flag] = True

    def _on_execute(self, state: Any) -> None:
        if not (state.is_insert or state.is_update or state.is_delete) or not self._mine(state.session):
            return
        table = getattr(state.statement, "table", None)
        if getattr(table, "name", None) in self._tables:
            state.session.info[self._flag] = True

    def _after_commit(self, session: Session) -> None:
        if session.info.pop(self._flag, False):
            self.bump()

    def _after_rollback(self, session: Session, _previous: Any) -> None:
        session.info.pop(self._flag, None)

    # ------------------------------------------------------------------ cache
    def bump(self) -> None:
        """Invalidate every cached entry."""
        with self._lock:
            self.generation += 1
            self._cache.clear()

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
            if generation == self.generation:  # no write committed while loading
                self._cache[key] = (generation, now, value)
        return value

    def close(self) -> None:
        for event_name, fn in self._listeners:
            if event.contains(Session, event_name, fn):
                event.remove(Session, event_name, fn)
