"""Load and concurrency: 4 threads and 2 processes at once, for a bounded time,
on one SQLite workspace and on one PostgreSQL database.

Threads (sharing one engine, as a runtime would): build prompts, search memory, write and
index memory files, append session messages / end runs / run the workers. Processes (each
with its own engine): append session messages and write context files. Afterwards: no
thread or process saw an error (``database is locked`` included), and every write that was
reported as done is in the database, counted row by row.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlmodel import func, select

from goclaw.contracts.store import UserContextFile
from goclaw_memory.tables import MemoryDocument, SessionMessage

DURATION = 5.0

PROCESS = """
import json, sys, time
from goclaw.engine import Engine
ws, url, tag, duration = sys.argv[1], sys.argv[2] or None, sys.argv[3], float(sys.argv[4])
appended = written = 0
errors = []
with Engine.open(ws, database_url=url) as engine:
    print("ready", flush=True)
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        try:
            engine.sessions.append("load", f"proc-{tag}", "user", f"message {appended}", user="u1")
            appended += 1
            engine.files.set("load", f"PROC_{tag}.md", f"version {written}", user=f"p{tag}")
            written += 1
        except Exception as exc:  # reported, never swallowed
            errors.append(f"{type(exc).__name__}: {exc}")
            break
print(json.dumps({"appended": appended, "written": written, "errors": errors}), flush=True)
"""


def _seed_memory(engine: Any) -> Path:
    agent = engine.agents.create("load")
    folder = engine.agent_dir(agent)
    (folder / "memory").mkdir(parents=True, exist_ok=True)
    (folder / "MEMORY.md").write_text(
        "# Facts\n\nThe staging database is called kestrel.\n\nDeploys happen on Tuesdays.\n"
    )
    for i in range(20):
        (folder / "memory" / f"2026-10-{i + 1:02d}.md").write_text(
            f"# Day {i}\n\nWorked on ticket LD-{1000 + i} about invoices and refunds.\n"
        )
    engine.memory.index("load")
    return folder


def test_four_threads_two_processes(engine: Any, workspace: Path, database_url: str | None) -> None:
    from goclaw.events import WorkerRunner

    folder = _seed_memory(engine)
    errors: list[str] = []
    counts: dict[str, int] = {"prompts": 0, "searches": 0, "indexed_files": 0, "appends": 0, "ends": 0}
    stop_at = time.monotonic() + DURATION
    lock = threading.Lock()

    def loop(name: str, step: Callable[[int], None]) -> None:
        i = 0
        try:
            while time.monotonic() < stop_at:
                step(i)
                i += 1
        except Exception:
            with lock:
                errors.append(f"{name}: {traceback.format_exc()}")

    def build(i: int) -> None:
        result = engine.prompt.build_for("load", user=f"u{i % 3}", message="what about kestrel?")
        assert "Safety" in result.prompt or result.sections
        counts["prompts"] += 1

    def search(i: int) -> None:
        engine.memory.search(f"ticket LD-{1000 + i % 20} refunds", "load", user="u1")
        counts["searches"] += 1

    def index(i: int) -> None:
        (folder / "memory" / f"load-{i}.md").write_text(f"# Load {i}\n\nNote number {i} about kestrel.\n")
        engine.memory.index("load")
        counts["indexed_files"] += 1

    runner = WorkerRunner(engine)

    def sessions(i: int) -> None:
        key = f"thread-{i // 5}"
        engine.sessions.append("load", key, "user" if i % 2 == 0 else "assistant", f"turn {i}", user="u2")
        counts["appends"] += 1
        if i % 5 == 4:
            engine.sessions.end(key)
            counts["ends"] += 1
            runner.run_once(max_events=20)

    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PROCESS, str(workspace), database_url or "", str(n), str(DURATION)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in (1, 2)
    ]
    for p in procs:
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "ready", p.stderr.read() if p.stderr else ""
    stop_at = time.monotonic() + DURATION
    threads = [
        threading.Thread(target=loop, args=(n, f))
        for n, f in (("prompt", build), ("search", search), ("index", index), ("sessions", sessions))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))

    assert not errors, "\n".join(errors)
    for r in results:
        assert r["errors"] == [], r["errors"]
    all_output = json.dumps(results) + "".join(errors)
    assert "database is locked" not in all_output
    # Everyone made progress.
    assert min(counts.values()) > 0, counts
    assert all(r["appended"] > 0 for r in results), results

    # No lost writes: every reported write is in the database.
    with engine.db.session() as s:
        for n, r in zip((1, 2), results, strict=True):
            stored = s.exec(
                select(func.count())
                .select_from(SessionMessage)
                .where(SessionMessage.session_key == f"proc-{n}")
            ).one()
            assert stored == r["appended"]
            row = s.exec(
                select(UserContextFile).where(
                    UserContextFile.user_id == f"p{n}", UserContextFile.file_name == f"PROC_{n}.md"
                )
            ).one()
            assert row.content == f"version {r['written'] - 1}"
        thread_msgs = s.exec(
            select(func.count())
            .select_from(SessionMessage)
            .where(SessionMessage.session_key.startswith("thread-"))  # type: ignore[attr-defined]
        ).one()
        assert thread_msgs == counts["appends"]
        docs = s.exec(
            select(func.count())
            .select_from(MemoryDocument)
            .where(MemoryDocument.path.startswith("memory/load-"))  # type: ignore[attr-defined]
        ).one()
        assert docs == counts["indexed_files"]
    print(f"\nload[{engine.db.backend}]: threads {counts}, processes {results}")
    # The queue drained what the ended runs published.
    WorkerRunner(engine).run_once()
    stats = engine.events.stats()
    assert stats.total("dead") == 0
