"""A large index run on SQLite commits without WAL checkpoints and checkpoints once after it
(for indexing speed; goclaw_memory.bulk_wal): its commits leave the log growing, the
pool's connections get their setting back, the log is copied in the background (``close``
waits), and a run killed midway leaves a consistent database that the next run completes."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.memory_helpers import write

FILES = 24


def _notes(root: Path) -> None:
    for i in range(FILES):
        body = "\n\n".join(
            f"## Section {j}\n- Customer {i}-{j} asked about invoice INV-{i * 100 + j} and the "
            f"refund of ${i * 7 + j}; Kite Ceramics escalation number {i}.{j}." + " More words." * 40
            for j in range(3)
        )
        write(root, f"memory/2026/note-{i:02d}.md", f"# Note {i}\n\n{body}\n")


@pytest.fixture
def sqlite_only(backend: str) -> None:
    if backend != "sqlite":
        pytest.skip("WAL checkpoints are SQLite's")


def _engine(make_engine: Any, monkeypatch: pytest.MonkeyPatch, bulk: int) -> tuple[Any, Path, Path]:
    import goclaw_memory.bulk_wal as bulk_wal
    import goclaw_memory.index_scan as index_scan

    monkeypatch.setattr(bulk_wal, "BULK", bulk)
    monkeypatch.setattr(index_scan, "BATCH_DOCS", 1)  # a transaction per file
    eng = make_engine()
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    _notes(root)
    db = Path(eng.db.engine.url.database)
    return eng, root, db


def _held(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    import goclaw_memory.bulk_wal as bulk_wal

    go = threading.Event()
    real = bulk_wal._checkpoint

    def held(path: str) -> None:
        assert go.wait(30)
        real(path)

    monkeypatch.setattr(bulk_wal, "_checkpoint", held)
    return go


def _small_checkpoints(eng: Any) -> None:
    """Every pooled connection checkpoints at each commit (1 page): what a run's commits would
    do at 100,000 chunks, at the size of a test."""
    from sqlalchemy import event

    eng.db.engine.dispose()
    event.listen(eng.db.engine, "connect", lambda conn, _rec: conn.execute("PRAGMA wal_autocheckpoint=1"))


def _log_frames(db: Path) -> int:
    wal = Path(f"{db}-wal")
    return (wal.stat().st_size - 32) // (8192 + 24) if wal.exists() else 0


def _run(ws: Path, monkeypatch: pytest.MonkeyPatch, bulk: int, go: threading.Event) -> int:
    """Index the notes in a new workspace (checkpoints deferred from ``bulk`` chunks), every
    connection checkpointing at each commit otherwise; the log's frames before the background
    checkpoint, which is checked to copy the whole log once let go."""
    from goclaw.engine import Engine
    from goclaw_memory import write_behind

    # one thread: a reader reading ahead meanwhile can keep a checkpoint from restarting the log
    monkeypatch.setattr(write_behind, "spare_core", lambda *_own: False)
    ws.mkdir()
    with Engine.open(ws) as eng:
        eng, _root, db = _engine(lambda: eng, monkeypatch, bulk)
        _small_checkpoints(eng)
        assert eng.memory.index("ada").rechunked == FILES
        frames = _log_frames(db)
        go.set()
    ckpt = sqlite3.connect(db).execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert ckpt[0] == 0 and ckpt[1] == ckpt[2]  # nothing left to copy
    return frames


def test_a_large_run_commits_without_checkpoints(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each commit of a large run leaves the log growing (24 transactions), where a run below
    the threshold checkpoints at each commit and restarts the log (unless a reader holds it)."""
    go = _held(monkeypatch)
    deferred = _run(tmp_path / "a", monkeypatch, 1, go)
    each = _run(tmp_path / "b", monkeypatch, 10**9, threading.Event())
    assert deferred > 3 * each > 0  # measured: 267 frames against 9-32


def test_the_pool_gets_its_checkpoint_setting_back(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch, sqlite_only: None
) -> None:
    eng, _root, _db = _engine(make_engine, monkeypatch, 1)
    eng.memory.index("ada")
    conns = [eng.db.engine.connect() for _ in range(5)]  # the pool's connections, at once
    try:
        assert [c.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() for c in conns] == [1000] * 5
        assert [c.exec_driver_sql("PRAGMA cache_size").scalar() for c in conns] == [-2000] * 5
    finally:
        for c in conns:
            c.close()


def test_a_bulk_runs_transactions_have_a_large_page_cache(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch, sqlite_only: None
) -> None:
    """The run's pages stay in the log until the checkpoint after it: its transactions keep
    them in a 64 MB page cache instead of reading them back from the log."""
    from goclaw_memory import bulk_wal, indexer

    eng, _root, _db = _engine(make_engine, monkeypatch, 1)
    seen: list[int] = []
    real = indexer.replace_documents

    def spy(session: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(session.connection().exec_driver_sql("PRAGMA cache_size").scalar())
        return real(session, *args, **kwargs)

    monkeypatch.setattr(indexer, "replace_documents", spy)
    eng.memory.index("ada")
    assert seen and set(seen) == {bulk_wal.BULK_CACHE_KIB}


KILLED = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    import goclaw_memory.bulk_wal as bulk_wal
    import goclaw_memory.index_scan as index_scan
    from goclaw_memory.indexer import MemoryIndexer
    from goclaw.engine import Engine

    bulk_wal.BULK = 1
    index_scan.BATCH_DOCS = 1
    real = MemoryIndexer._write_batch
    done = [0]

    def write_batch(self, *args, **kwargs):
        real(self, *args, **kwargs)
        done[0] += 1
        if done[0] == 7:  # committed 7 files, no checkpoint yet: killed
            os.kill(os.getpid(), signal.SIGKILL)

    MemoryIndexer._write_batch = write_batch
    eng = Engine.open(Path(sys.argv[1]))
    eng.memory.index("ada")
    """
)


def test_a_bulk_run_killed_midway_leaves_a_consistent_database(
    workspace: Path, make_engine: Any, monkeypatch: pytest.MonkeyPatch, sqlite_only: None
) -> None:
    eng, _root, db = _engine(make_engine, monkeypatch, 1)
    eng.close()
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", HF_HUB_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-c", KILLED, str(workspace)], env=env, timeout=120, check=False)
    assert proc.returncode == -9
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        docs = conn.execute(
            "SELECT d.path, d.chunk_count, COUNT(c.id) FROM memory_documents d "
            "LEFT JOIN memory_chunks c ON c.document_id = d.id GROUP BY d.id"
        ).fetchall()
    finally:
        conn.close()
    assert len(docs) == 7 and all(count == chunks > 0 for _p, count, chunks in docs)
    again = make_engine()
    report = again.memory.index("ada")
    assert report.rechunked == FILES - 7 and report.skipped_unchanged == 7
    hits = again.memory.search("invoice INV-2302 refund", "ada", limit=3)
    assert hits and hits[0].path == "memory/2026/note-23.md"
