"""CommitWatch: a thread's remembered tokens last until another connection commits."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from goclaw_search.commit_watch import CommitWatch


def test_tokens_last_until_another_connection_commits(tmp_path: Path) -> None:
    path = str(tmp_path / "db.sqlite")
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("CREATE TABLE t (x INTEGER)")
    opened: list[sqlite3.Connection] = []
    watch = CommitWatch(path, opened.append)
    assert watch.remembered("a") == (False, None)
    watch.remember("a", 7)
    assert watch.remembered("a") == (True, 7) and watch.remembered("b") == (False, None)
    writer.execute("INSERT INTO t VALUES (1)")  # another connection commits
    assert watch.remembered("a") == (False, None)
    watch.remember("a", 8)
    assert watch.remembered("a") == (True, 8)
    other: list[tuple[bool, object]] = []  # another thread remembers nothing of this one's
    thread = threading.Thread(target=lambda: other.append(watch.remembered("a")))
    thread.start()
    thread.join()
    assert other == [(False, None)] and len(opened) == 2
    conn = watch.connection()
    assert conn is not None and conn.execute("PRAGMA query_only").fetchone()[0] == 1
    for c in opened:
        c.close()
    writer.close()


def test_a_database_that_is_no_file_is_not_watched() -> None:
    for path in (None, ":memory:", "file:x?mode=memory"):
        watch = CommitWatch(path)
        watch.remember("a", 1)
        assert watch.connection() is None and watch.remembered("a") == (False, None)
