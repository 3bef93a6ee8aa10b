"""Hot reload: a watchdog observer on every skill root.

Each existing root is watched recursively (so new skill sub-folders are covered at once). A
root that does not exist yet is covered by watching its nearest existing parent
(non-recursively) until it appears; the watch set is recomputed after every debounced
change. Relevant events: anything on a file named ``SKILL.md``, any directory created,
deleted or moved, and any deletion or move; plain writes to other files are ignored. Events
are debounced with a trailing timer (500 ms by default), then the loader's version is bumped
and the next prompt build re-reads the tiers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_RELEVANT = {"created", "deleted", "moved", "modified", "closed"}


class SkillWatcher:
    """Watches ``roots()`` and calls ``on_change()`` after ``debounce`` seconds of quiet."""

    def __init__(
        self, roots: Callable[[], list[Path]], on_change: Callable[[], None], debounce: float = 0.5
    ) -> None:
        self._roots = roots
        self._on_change = on_change
        self.debounce = debounce
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._observer: Any = None
        self._watches: dict[tuple[str, bool], Any] = {}
        self._root_paths: list[Path] = []
        self.bumps = 0

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        from watchdog.observers import Observer

        with self._lock:
            if self._observer is not None:
                return
            self._observer = Observer()
            self._observer.daemon = True
            self._reschedule_locked()
            self._observer.start()

    def stop(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            observer, self._observer = self._observer, None
            self._watches.clear()
        if observer is not None:
            observer.stop()
            observer.join(timeout=5)

    @property
    def running(self) -> bool:
        return self._observer is not None

    # ------------------------------------------------------------------ watches
    def _desired(self) -> dict[tuple[str, bool], Path]:
        want: dict[tuple[str, bool], Path] = {}
        self._root_paths = [Path(r).absolute() for r in self._roots()]
        for root in self._root_paths:
            if root.is_dir():
                want[(str(root), True)] = root
                continue
            parent = root.parent
            while not parent.is_dir() and parent != parent.parent:
                parent = parent.parent
            if parent.is_dir():
                want[(str(parent), False)] = parent
        # A recursive watch already covers anything below it.
        recursive = [Path(k[0]) for k in want if k[1]]
        return {k: p for k, p in want.items() if k[1] or not any(p == r or r in p.parents for r in recursive)}

    def _reschedule_locked(self) -> None:
        if self._observer is None:
            return
        desired = self._desired()
        for key in list(self._watches):
            if key not in desired:
                try:
                    self._observer.unschedule(self._watches.pop(key))
                except Exception:  # the folder vanished: its watch is gone already
                    log.debug("unschedule failed", exc_info=True)
        handler = _Handler(self)
        for key, path in desired.items():
            if key in self._watches:
                continue
            try:
                self._watches[key] = self._observer.schedule(handler, str(path), recursive=key[1])
            except OSError as exc:  # e.g. inotify watch limit: report, keep going
                log.warning("cannot watch skills folder %s: %s", path, exc)

    # ------------------------------------------------------------------ events
    def relevant(self, event: Any) -> bool:
        kind = getattr(event, "event_type", "")
        if kind not in _RELEVANT:
            return False
        paths = [Path(str(event.src_path))]
        if getattr(event, "dest_path", None):
            paths.append(Path(str(event.dest_path)))
        for p in paths:
            inside = any(p == r or r in p.parents for r in self._root_paths)
            if inside:
                if p.name.upper() == "SKILL.MD":
                    return True
                if kind in {"deleted", "moved"} or (event.is_directory and kind == "created"):
                    return True
            elif any(r == p or p in r.parents for r in self._root_paths):
                return kind in {"created", "deleted", "moved"}  # a root (or its parent) appeared/vanished
        return False

    def notify(self) -> None:
        with self._lock:
            if self._observer is None:
                return
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.debounce, self._fire)
            self._timer.daemon = True
            self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            self._timer = None
            if self._observer is None:
                return
            self._reschedule_locked()
        self.bumps += 1
        try:
            self._on_change()
        except Exception:
            log.warning("skill reload failed", exc_info=True)


class _Handler:
    """A watchdog event handler (duck-typed: watchdog only calls ``dispatch``)."""

    def __init__(self, watcher: SkillWatcher) -> None:
        self.watcher = watcher

    def dispatch(self, event: Any) -> None:
        if self.watcher.relevant(event):
            self.watcher.notify()
