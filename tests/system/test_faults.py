"""Fault injection at the kernel level.

* ``kill -9`` in the middle of context-file writes: afterwards every file holds one complete
  version (old or new, never a mix), the SQLite database passes ``integrity_check``, and the
  next write works;
* a full disk (SQLite's real ``SQLITE_FULL`` path, forced with ``max_page_count``) and a
  read-only database give one clear message, and nothing half-written is left;
* an unreachable database at start gives one line and a non-zero exit from the CLI.

Kill tests for indexing and for worker event handling live with those features
(``tests/plugins/memory/`` and ``tests/plugins/episodic/``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import event

from goclaw.engine import Engine
from goclaw.errors import StoreError
from tests.helpers import run_cli

N = 200_000  # characters per version: big enough that a torn write would be visible

WRITER = """
import sys, itertools
from goclaw.engine import Engine
ws, N = sys.argv[1], int(sys.argv[2])
with Engine.open(ws) as engine:
    print("ready", flush=True)
    for i in itertools.count():
        letter = "bc"[i % 2]
        engine.files.set("victim", "SOUL.md", letter * N)
        engine.files.set("victim", "NOTES.md", letter * N, user="u1")
"""


@pytest.mark.parametrize("delay", [0.3, 0.9])
def test_kill_9_during_context_file_writes(workspace: Path, delay: float) -> None:
    with Engine.open(workspace) as engine:
        engine.agents.create("victim")
        engine.files.set("victim", "SOUL.md", "a" * N)
        engine.files.set("victim", "NOTES.md", "a" * N, user="u1")

    with subprocess.Popen(  # closes its pipes at the end (else unclosed-file warnings)
        [sys.executable, "-c", WRITER, str(workspace), str(N)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    with Engine.open(workspace) as engine:
        with engine.db.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
        for name, user in (("SOUL.md", None), ("NOTES.md", "u1")):
            content = engine.files.get("victim", name, user=user)
            assert len(content) == N and content == content[0] * N, "a torn write is visible"
        engine.files.set("victim", "SOUL.md", "d" * 10)
        assert engine.files.get("victim", "SOUL.md") == "d" * 10


def test_disk_full_is_one_clear_error_and_nothing_half_written(workspace: Path) -> None:
    with Engine.open(workspace) as engine:
        engine.agents.create("full")
        engine.files.set("full", "SOUL.md", "small and safe")
        engine.db.engine.dispose()

        @event.listens_for(engine.db.engine, "connect")
        def _cap(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            pages = dbapi_conn.execute("PRAGMA page_count").fetchone()[0]
            dbapi_conn.execute(f"PRAGMA max_page_count = {pages + 2}")

        with pytest.raises(StoreError) as err:
            engine.files.set("full", "SOUL.md", "x" * 900_000)
        assert "disk is full" in str(err.value)
        assert "\n" not in str(err.value)
        assert engine.files.get("full", "SOUL.md") == "small and safe"


def test_read_only_database_is_one_clear_error(workspace: Path) -> None:
    with Engine.open(workspace) as engine:
        engine.agents.create("ro")
        engine.files.set("ro", "SOUL.md", "unchanged")
    db = workspace / ".goclaw" / "goclaw.db"
    url = f"sqlite:///file:{db}?mode=ro&uri=true"
    with Engine.open(workspace, database_url=url) as engine:
        assert engine.files.get("ro", "SOUL.md") == "unchanged"  # reads still work
        with pytest.raises(StoreError) as err:
            engine.files.set("ro", "SOUL.md", "changed")
        assert "read-only" in str(err.value)
    result = run_cli(
        ["files", "set", "--agent", "ro", "SOUL.md"], workspace=workspace, database_url=url, stdin="x"
    )
    assert result.code == 5
    assert result.err.startswith("error: ") and "read-only" in result.err
    assert result.err.count("\n") == 1


def test_unreachable_database_at_start_cli(workspace: Path) -> None:
    result = run_cli(["agent", "list"], workspace=workspace, database_url="postgresql://u:pw@127.0.0.1:9/db")
    assert result.code == 5
    assert result.err.startswith("error: cannot connect to database")
    assert "pw" not in result.err
    assert result.err.count("\n") == 1
