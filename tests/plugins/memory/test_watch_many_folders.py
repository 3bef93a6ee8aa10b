"""``memory watch`` over many folders.

With watchdog's default mask, every open/read/close of a watched folder is an event, so over
~10,000 folders the watcher's own re-walk after an inotify queue overflow (and every re-index)
floods the queue again and loops (about 60 % CPU while idle). The watcher asks
only for the events that can change memory, and treats an overflow (events lost) as one
debounced full rescan. Real watchdog observers on real folders; the overflow itself is
injected as the kernel's IN_Q_OVERFLOW event through watchdog's own inotify event type (the
kernel's queue limit is a machine-wide setting that a test must not lower).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.memory_helpers import write

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux only")

FOLDERS = 1500


def _wait(predicate: Any, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _many_folders(root: Path, n: int = FOLDERS) -> None:
    for i in range(n):
        folder = root / "memory" / f"d{i:05d}"
        folder.mkdir(parents=True)
        if i % 50 == 0:
            (folder / "note.md").write_text(f"note {i}\n", encoding="utf-8")


@pytest.fixture
def eng(make_engine: Any) -> Any:
    e = make_engine(plugins={"embeddings": {"provider": "none"}})
    e.agents.create("ada")
    return e


def _count_events(watcher: Any) -> list[Any]:
    seen: list[Any] = []
    real = watcher.dispatch

    def counting(event: Any) -> None:
        seen.append(event)
        real(event)

    watcher.dispatch = counting
    return seen


@pytest.mark.parametrize("backend", ["sqlite"])
def test_reading_the_tree_raises_no_events(eng: Any) -> None:
    """A walk over every watched folder and a full re-index read everything: with the old
    mask each folder listed and each file read came back as events (tens of thousands at
    ~10,000 folders: the overflow loop). Now none does."""
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    _many_folders(root)
    eng.memory.index("ada")
    watcher = eng.memory.watch("ada", debounce_ms=100, start=False)
    seen = _count_events(watcher)
    watcher.start()
    raw: list[Any] = []  # what the kernel queues (the queue that overflowed), watchdog's reader
    fd = getattr(watcher._observer, "_inotify_fd", None)
    if fd is None:
        watcher.stop()
        pytest.skip("this watchdog has no per-observer inotify reader")
    real_handle = fd.handle_event
    fd.handle_event = lambda event: (raw.append(event), real_handle(event))
    try:
        for folder, _dirs, files in os.walk(root):
            for name in files:
                (Path(folder) / name).read_bytes()
        eng.memory.index("ada")  # what every rescan does: list and read every memory file
        time.sleep(1.0)
        assert (len(seen), len(raw)) == (0, 0)
        write(root, "memory/d00007/fresh.md", "A fresh note about OKAPI.\n")  # real changes still arrive
        assert _wait(lambda: bool(eng.memory.search("OKAPI", "ada", channel="lexical")))
    finally:
        watcher.stop()
    assert watcher.errors == []


def _indexed(eng: Any) -> set[str]:
    from sqlalchemy import text

    with eng.db.engine.connect() as conn:
        return {r[0] for r in conn.execute(text("SELECT path FROM memory_documents"))}


def _overflow(watcher: Any) -> None:
    """What the kernel sends when its queue overflows (wd -1, IN_Q_OVERFLOW), through
    watchdog's own inotify reader of this watcher's observer."""
    from watchdog.observers.inotify_c import InotifyConstants, InotifyEvent

    fd = getattr(watcher._observer, "_inotify_fd", None)
    if fd is None:
        pytest.skip("this watchdog has no per-observer inotify reader")
    fd.handle_event(InotifyEvent(-1, InotifyConstants.IN_Q_OVERFLOW, 0, b""))


@pytest.mark.parametrize("backend", ["sqlite"])
def test_overflow_means_one_debounced_rescan(eng: Any) -> None:
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    _many_folders(root, 300)
    eng.memory.index("ada")
    reports: list[Any] = []
    watcher = eng.memory.watch("ada", debounce_ms=300, on_index=reports.append, start=False)
    real = watcher.dispatch
    lost: list[Any] = []
    watcher.dispatch = lost.append  # events lost, as in an overflowing queue
    watcher.start()
    try:
        write(root, "memory/d00011/lost.md", "Written while events were lost: NARWHAL.\n")
        (root / "memory" / "d00050" / "note.md").unlink()
        # inotify delivers in order: once the deletion is lost, so are the write's events.
        assert _wait(
            lambda: any(e.event_type == "deleted" and str(e.src_path).endswith("note.md") for e in lost)
        )
        watcher.dispatch = real
        for _ in range(5):  # a burst of overflows: one rescan after the quiet period
            _overflow(watcher)
            time.sleep(0.05)
        assert _wait(lambda: bool(eng.memory.search("NARWHAL", "ada", channel="lexical")))
        assert _wait(lambda: "memory/d00050/note.md" not in _indexed(eng))  # the lost delete too
        time.sleep(1.0)  # ... and nothing after it: no loop
        assert len(reports) == 1 and watcher.overflows == 5
        write(root, "memory/d00012/after.md", "After the overflow: DUGONG.\n")  # still watching
        assert _wait(lambda: bool(eng.memory.search("DUGONG", "ada", channel="lexical")))
    finally:
        watcher.stop()
    assert watcher.errors == []


@pytest.mark.parametrize("backend", ["sqlite"])
def test_inotify_limit_is_a_clear_error(eng: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from watchdog.observers.inotify import InotifyEmitter

    from tests.helpers import run_cli

    def full(self: Any) -> None:
        raise OSError(errno.ENOSPC, "inotify watch limit reached")

    monkeypatch.setattr(InotifyEmitter, "on_thread_start", full)
    res = run_cli(["memory", "watch", "--agent", "ada"], workspace=workspace)
    assert res.code != 0 and "Traceback" not in res.err and "internal error" not in res.err
    assert res.err.startswith("error: memory watch: the system's inotify limit is reached")
