"""Re-index memory files when they change.

One watchdog observer watches every watched agent folder recursively. Events on memory files
(or on folders, which may hold some: a moved ``memory/`` folder) mark their scope dirty; once
no event has arrived for the debounce period (1,500 ms by default, a trailing debounce) the
dirty scopes are re-indexed. Re-indexing a scope is cheap thanks to the hash skip, and it also
picks up deletions and renames.

Scale: the observer asks the operating system only for the events that can change memory
(create, delete, modify, move). With watchdog's default mask every listing of a watched folder
and every file read is queued too: over ~10,000 folders one re-index or one re-walk queues
more than inotify's 16,384 events, and watchdog's re-walk after each overflow overflows again
(≈60 % CPU while idle). An overflow means events were lost, so it marks every watched scope
dirty: one full rescan after the debounce period, however many overflows arrive in a burst.
"""

from __future__ import annotations

import errno
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from goclaw_memory.paths import USERS_DIR, classify

if TYPE_CHECKING:
    from goclaw.contracts.host import Host
    from goclaw.contracts.store import Agent
    from goclaw_memory.indexer import IndexReport

log = logging.getLogger(__name__)

_RELEVANT = {"created", "modified", "moved", "deleted"}


class _Indexing(Protocol):
    """What the watcher uses of the memory service (goclaw_memory.service, which imports this
    module)."""

    @property
    def engine(self) -> Host: ...

    def index(
        self, agent: str | Agent | None = None, user: str | None = None, *, scopes: list[str] | None = None
    ) -> IndexReport: ...


class MemoryWatcher:
    def __init__(
        self,
        service: _Indexing,
        agents: list[Agent],
        *,
        user: str | None,
        debounce_ms: int,
        on_index: Callable[[IndexReport], None] | None = None,
    ) -> None:
        self.service = service
        self.agents = {a.id: a for a in agents}
        self.dirs = {a.id: service.engine.agent_dir(a).resolve() for a in agents}
        self.user = user
        self.debounce = max(0, debounce_ms) / 1000.0
        self.on_index = on_index
        self._dirty: set[tuple[str, str]] = set()
        self._last_event = 0.0
        self._cond = threading.Condition()
        self._stopping = False
        self._observer: Any = None
        self._thread: threading.Thread | None = None
        self.runs = 0  # completed re-index passes (tests and the CLI read it)
        self.overflows = 0  # OS event-queue overflows seen (each one: events were lost)
        self.errors: list[str] = []

    # ------------------------------------------------------------------ events
    def _event(self, path: str, is_directory: bool) -> None:
        p = Path(path)
        for agent_id, root in self.dirs.items():
            try:
                rel = p.relative_to(root)
            except ValueError:
                continue
            scope: str | None = None
            found = classify(root, p)
            if found is not None:
                scope = found[0]
            elif is_directory or p.suffix == "":
                parts = rel.parts
                if parts and parts[0] == USERS_DIR:
                    scope = parts[1] if len(parts) > 1 else None
                    if len(parts) == 1:  # the users/ folder itself: every user may have changed
                        scope = "*"
                elif parts and parts[0] == "memory":
                    scope = ""
            if scope is None:
                continue
            if self.user is not None and scope not in (self.user, "*"):
                continue
            with self._cond:
                self._dirty.add((agent_id, scope))
                self._last_event = time.monotonic()
                self._cond.notify_all()

    def overflowed(self) -> None:
        """Events were lost: rescan every watched scope once things are quiet again."""
        log.warning("file events were lost (inotify queue overflow); rescanning memory after a quiet period")
        with self._cond:
            self.overflows += 1
            self._dirty.update((agent_id, "*") for agent_id in self.dirs)
            self._last_event = time.monotonic()
            self._cond.notify_all()

    def dispatch(self, event: Any) -> None:
        if event.event_type not in _RELEVANT:
            return
        self._event(event.src_path, event.is_directory)
        dest = getattr(event, "dest_path", "")
        if dest:
            self._event(dest, event.is_directory)

    # ------------------------------------------------------------------ loop
    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._dirty and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                wait = self._last_event + self.debounce - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                dirty, self._dirty = self._dirty, set()
            self._reindex(dirty)

    def _reindex(self, dirty: set[tuple[str, str]]) -> None:
        by_agent: dict[str, set[str]] = {}
        for agent_id, scope in dirty:
            by_agent.setdefault(agent_id, set()).add(scope)
        for agent_id, scopes in by_agent.items():
            agent = self.agents[agent_id]
            try:
                if "*" in scopes:
                    report = self.service.index(agent, self.user)
                else:
                    report = self.service.index(agent, scopes=sorted(scopes))
            except Exception as exc:  # keep watching; report the failure
                log.warning("memory re-index of %s failed: %s", agent.name, exc)
                self.errors.append(f"{agent.name}: {exc}")
                continue
            self.runs += 1
            if self.on_index is not None:
                try:
                    self.on_index(report)
                except Exception:
                    log.debug("on_index callback failed", exc_info=True)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        from watchdog import events as ev
        from watchdog.observers import Observer

        watcher = self

        class _Handler(ev.FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                watcher.dispatch(event)

        # Only what can change memory: no open / read / close events (see the module docstring).
        wanted: list[type[ev.FileSystemEvent]] = [
            ev.FileCreatedEvent,
            ev.FileDeletedEvent,
            ev.FileModifiedEvent,
            ev.FileMovedEvent,
            ev.DirCreatedEvent,
            ev.DirDeletedEvent,
            ev.DirMovedEvent,
        ]
        observer = Observer()
        handler = _Handler()
        try:
            for root in self.dirs.values():
                root.mkdir(parents=True, exist_ok=True)
                observer.schedule(handler, str(root), recursive=True, event_filter=wanted)
            observer.daemon = True
            observer.start()
        except OSError as exc:
            from goclaw.errors import ConfigError

            try:
                observer.stop()
            except Exception:  # never started: nothing to stop
                log.debug("stopping a half-started observer failed", exc_info=True)
            if exc.errno in (errno.ENOSPC, errno.EMFILE):
                raise ConfigError(
                    "memory watch: the system's inotify limit is reached (too many folders watched); "
                    "raise fs.inotify.max_user_watches / max_user_instances, or index with "
                    "'goclaw memory index' instead"
                ) from None
            raise
        self._observer = observer
        self._hook_overflow(observer)
        self._thread = threading.Thread(target=self._loop, name="goclaw-memory-watch", daemon=True)
        self._thread.start()

    def _hook_overflow(self, observer: Any) -> None:
        """Learn about inotify queue overflows. watchdog (>= 7) rebuilds its watches then but
        tells no handler that events were lost; its watch groups are told, so each one is
        wrapped to also schedule our rescan. Older watchdogs have no such callback: no-op."""
        for emitter in list(getattr(observer, "emitters", ())):
            group = getattr(emitter, "_inotify", None)
            original = getattr(group, "on_queue_overflow", None)
            if group is None or original is None:
                continue

            def on_queue_overflow(original: Any = original) -> None:
                try:
                    original()  # watchdog re-watches folders whose creation was lost
                finally:
                    self.overflowed()

            group.on_queue_overflow = on_queue_overflow

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def __enter__(self) -> MemoryWatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
