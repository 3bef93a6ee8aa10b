"""The durable event queue: publish in the caller's transaction, claims,
backoff, dead-letter, crash recovery with a real SIGKILLed ``goclaw workers run``, and two
PostgreSQL worker processes that never process one event twice."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from goclaw.events import DeferEvent, EventQueue, WorkerRunner
from goclaw.store.models import Event, EventDelivery
from tests.consolidation_helpers import (
    goclaw_cmd,
    install_test_worker,
    load_test_worker,
    subprocess_env,
)


class Recorder:
    """An in-process worker that records what it saw and can fail on demand."""

    def __init__(self, name: str = "recorder", types: frozenset[str] = frozenset({"t.x"})) -> None:
        self.name = name
        self.event_types = types
        self.seen: list[int] = []
        self.fail_ids: set[int] = set()
        self.defer_once: set[int] = set()

    def handle(self, event: Any, engine: Any) -> None:
        if event.id in self.defer_once:
            self.defer_once.discard(event.id)
            raise DeferEvent(3600, "later")
        if event.id in self.fail_ids:
            raise ValueError(f"boom {event.id}")
        self.seen.append(event.id)


class RecorderPlugin:
    def __init__(self, worker: Recorder) -> None:
        self.worker = worker

    from goclaw import hookimpl

    @hookimpl
    def goclaw_consolidation_workers(self) -> list[Any]:
        return [self.worker]


def _deliveries(engine: Any) -> list[EventDelivery]:
    with engine.db.session() as s:
        return list(s.exec(select(EventDelivery).order_by(EventDelivery.event_id)))


def test_publish_is_part_of_the_callers_transaction(make_engine: Any) -> None:
    rec = Recorder()
    engine = make_engine(extra_plugins=[("rec", RecorderPlugin(rec))])
    with pytest.raises(RuntimeError), engine.db.write() as s:
        engine.events.publish(s, "t.x", {"n": 1})
        raise RuntimeError("caller fails after publishing")
    with engine.db.session() as s:
        assert s.exec(select(Event)).all() == []
    with engine.db.write() as s:
        event_id = engine.events.publish(s, "t.x", {"n": 2})
        engine.events.publish(s, "nobody.listens", {})
    rows = _deliveries(engine)
    # one delivery for the one subscriber; the unsubscribed event is kept with none
    assert [(d.event_id, d.worker, d.status) for d in rows] == [(event_id, "recorder", "pending")]
    report = WorkerRunner(engine).run_once()
    assert rec.seen == [event_id] and report.processed == 1
    done = _deliveries(engine)[0]
    assert done.status == "done" and done.processed_at is not None and done.attempts == 1
    # processed rows are kept for inspection, and a second pass does nothing
    assert WorkerRunner(engine).run_once().processed == 0 and rec.seen == [event_id]


def test_failure_backs_off_then_dead_letters_without_blocking(make_engine: Any) -> None:
    rec = Recorder()
    engine = make_engine(
        extra_plugins=[("rec", RecorderPlugin(rec))],
        events={"max_attempts": 3, "backoff_base_seconds": 0},
    )
    ids = [engine.events.publish_now("t.x", {"i": i}) for i in range(4)]
    poison = ids[1]
    rec.fail_ids.add(poison)
    report = WorkerRunner(engine, batch_size=2).run_once()
    assert sorted(rec.seen) == sorted(set(ids) - {poison})  # healthy events all flowed past it
    by_id = {d.event_id: d for d in _deliveries(engine)}
    assert by_id[poison].status == "dead" and by_id[poison].attempts == 3
    assert "boom" in (by_id[poison].last_error or "")
    assert report.dead == 1 and report.failed == 2
    # an operator fixes the cause and retries the dead letter
    rec.fail_ids.clear()
    assert engine.events.retry(poison) == 1
    WorkerRunner(engine).run_once()
    assert rec.seen.count(poison) == 1


def test_backoff_delays_the_retry(make_engine: Any) -> None:
    rec = Recorder()
    engine = make_engine(extra_plugins=[("rec", RecorderPlugin(rec))], events={"backoff_base_seconds": 120})
    event_id = engine.events.publish_now("t.x", {})
    rec.fail_ids.add(event_id)
    before = time.time()
    WorkerRunner(engine).run_once()
    d = _deliveries(engine)[0]
    assert d.status == "pending" and d.attempts == 1
    wait = d.available_at.timestamp() - before
    assert 100 < wait < 140  # base 120 s with ±10% jitter
    queue: EventQueue = engine.events
    assert queue.backoff(3) == pytest.approx(480, rel=0.11)  # doubles per attempt


def test_defer_does_not_count_as_an_attempt(make_engine: Any) -> None:
    rec = Recorder()
    engine = make_engine(extra_plugins=[("rec", RecorderPlugin(rec))])
    event_id = engine.events.publish_now("t.x", {})
    rec.defer_once.add(event_id)
    report = WorkerRunner(engine).run_once()
    d = _deliveries(engine)[0]
    assert report.deferred == 1 and d.status == "pending" and d.attempts == 0 and rec.seen == []


def test_claims_are_exclusive_and_stale_claims_are_retaken(make_engine: Any) -> None:
    rec = Recorder()
    engine = make_engine(extra_plugins=[("rec", RecorderPlugin(rec))], events={"lease_seconds": 1})
    for i in range(3):
        engine.events.publish_now("t.x", {"i": i})
    first = engine.events.claim("host-a:1:x", 2)
    second = engine.events.claim("host-b:2:y", 5)
    assert len(first) == 2 and len(second) == 1
    assert not {e.id for e in first} & {e.id for e in second}
    assert engine.events.claim("host-c:3:z", 5) == []
    time.sleep(1.2)  # the lease runs out: another worker may take the work over
    retaken = engine.events.claim("host-c:3:z", 5)
    assert sorted(e.id for e in retaken) == sorted(e.id for e in first + second)
    assert all(e.attempts == 2 for e in retaken)
    # the original owner can no longer complete what it lost
    assert engine.events.complete(first[0]) is False
    assert engine.events.complete(retaken[0]) is True


def test_replay_of_a_done_event_runs_the_handler_again(make_engine: Any) -> None:
    rec = Recorder()
    engine = make_engine(extra_plugins=[("rec", RecorderPlugin(rec))])
    event_id = engine.events.publish_now("t.x", {})
    WorkerRunner(engine).run_once()
    assert engine.events.retry(event_id, dead_only=False) == 1
    WorkerRunner(engine).run_once()
    assert rec.seen == [event_id, event_id]  # handlers must be idempotent (episodic tests)


# ------------------------------------------------------------------------------ real processes


def _cli_args(workspace: Path, database_url: str | None) -> list[str]:
    args = [*goclaw_cmd(), "--workspace", str(workspace)]
    if database_url:
        args += ["--database-url", database_url]
    return args


def _wait_for(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.05)


def test_worker_killed_mid_event_loses_nothing(
    make_engine: Any, workspace: Path, database_url: str | None, tmp_path: Path
) -> None:
    plugin_root = install_test_worker(tmp_path / "site")
    module = load_test_worker(plugin_root)
    engine = make_engine(extra_plugins=[("testworker", module)])
    event_id = engine.events.publish_now("test.work", {"n": 1})
    work = tmp_path / "work"
    work.mkdir()
    with subprocess.Popen(  # closes its stderr pipe at the end (else an unclosed-file warning)
        [*_cli_args(workspace, database_url), "workers", "run", "--worker", "testworker"],
        env=subprocess_env(plugin_root, work, GOCLAW_TW_BLOCK="1"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    ) as proc:
        try:
            _wait_for(work / "blocked")
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    d = next(x for x in _deliveries(engine) if x.worker == "testworker")
    assert d.status == "processing" and d.attempts == 1  # in flight when the process died
    # restart: the orphaned delivery is recovered at once and processed
    result = subprocess.run(
        [*_cli_args(workspace, database_url), "workers", "run", "--once", "--worker", "testworker", "--json"],
        env=subprocess_env(plugin_root, work),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    d = next(x for x in _deliveries(engine) if x.worker == "testworker")
    assert d.status == "done" and d.attempts == 2
    done = [line for f in work.glob("done-*.log") for line in f.read_text().split()]
    assert done == [str(event_id)]


@pytest.mark.postgres
def test_two_postgres_worker_processes_never_share_an_event(
    pg_schema_url: str, workspace: Path, tmp_path: Path
) -> None:
    from goclaw.engine import Engine

    plugin_root = install_test_worker(tmp_path / "site")
    module = load_test_worker(plugin_root)
    engine = Engine.open(workspace, pg_schema_url, extra_plugins=[("testworker", module)])
    try:
        with engine.db.write() as s:
            ids = [engine.events.publish(s, "test.work", {"i": i}) for i in range(60)]
        work = tmp_path / "work"
        work.mkdir()
        cmd = [*_cli_args(workspace, pg_schema_url), "workers", "run", "--once", "--worker", "testworker"]
        env = subprocess_env(plugin_root, work, GOCLAW_TW_SLEEP="0.02")
        procs = [
            subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for _ in range(2)
        ]
        for p in procs:
            _, err = p.communicate(timeout=180)  # also closes its stderr pipe
            assert p.returncode == 0, err
        started = Counter(line for f in work.glob("start-*.log") for line in f.read_text().split())
        assert sorted(int(k) for k in started) == sorted(ids)
        assert max(started.values()) == 1  # no event was ever handed to two processes
        per_process = [len(f.read_text().split()) for f in work.glob("done-*.log")]
        assert len(per_process) == 2 and all(n > 0 for n in per_process)  # both really worked
        assert {d.status for d in _deliveries(engine)} == {"done"}
    finally:
        engine.close()


@pytest.mark.postgres
def test_listen_notify_wakes_an_idle_worker(pg_schema_url: str, workspace: Path) -> None:
    from goclaw.engine import Engine

    engine = Engine.open(workspace, pg_schema_url)
    try:
        listener = engine.events.listener()
        try:
            assert listener.wait(0.2) is False  # nothing published: times out
            engine.events.publish_now("run.completed", {"session_key": "nope"})
            assert listener.wait(10.0) is True  # woken by NOTIFY at commit
        finally:
            listener.close()
    finally:
        engine.close()
