"""Re-index memory files when they change (issue 5 "Watcher").

One watchdog observer watches every watched agent folder recursively. Events on memory files
(or on folders, which may hold some: a moved ``memory/`` folder) mark their scope dirty; once
no event has arrived for the debounce period (1,500 ms by default, a trailing debounce) the
dirty scopes are re-indexed. Re-indexing a scope is cheap thanks to the hash skip, and it also
picks up deletions and renames. ``opened``/``closed`` events (watchdog ≥ 7) are ignored.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goclaw_memory.paths import USERS_DIR, classify

if TYPE_CHECKING:
    from goclaw.store.models import Agent
    from goclaw_memory.indexer import IndexReport
    from goclaw_memory.service import MemoryService

log = logging.getLogger(__name__)

_RELEVANT = {"created", "modified", "moved", "deleted"}


class MemoryWatcher:
    def __init__(
        self,
        service: MemoryService,
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
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        watcher = self

        class _Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                watcher.dispatch(event)

        observer = Observer()
        handler = _Handler()
        for root in self.dirs.values():
            root.mkdir(parents=True, exist_ok=True)
            observer.schedule(handler, str(root), recursive=True)
        observer.daemon = True
        observer.start()
        self._observer = observer
        self._thread = threading.Thread(target=self._loop, name="goclaw-memory-watch", daemon=True)
        self._thread.start()

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
