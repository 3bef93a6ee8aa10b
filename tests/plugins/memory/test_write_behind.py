"""An index run writes batch N on a background thread while batch N+1 is prepared (for
indexing speed): same transactions in the same order, and an interruption leaves every
document whole and the next run finishing the job."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from goclaw_memory import index_scan, write_behind
from goclaw_memory import indexer as mod
from goclaw_memory.write_behind import WriteBehind
from tests.memory_helpers import write


def always(*_own: int) -> bool:
    return True


@pytest.fixture
def spare_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """Index runs write behind whatever the machine's load."""
    monkeypatch.setattr(write_behind, "spare_core", always)


def _held_writer() -> tuple[threading.Event, threading.Event, list[int], Any]:
    """A write that signals ``started``, then waits for ``release`` (5 s at most) and records
    its item in ``finished``."""
    started, release = threading.Event(), threading.Event()
    finished: list[int] = []

    def slow(i: int) -> int:
        started.set()
        release.wait(5)
        finished.append(i)
        return 1

    return started, release, finished, slow


def test_writes_run_in_order_on_another_thread() -> None:
    seen: list[tuple[int, str]] = []
    with WriteBehind(lambda i: seen.append((i, threading.current_thread().name)) or i, overlap=always) as w:
        done = [n for i in range(1, 6) for n in w.submit(i)]
        done += w.finish()
    assert [i for i, _t in seen] == [1, 2, 3, 4, 5] and done == [1, 2, 3, 4, 5]
    assert {t for _i, t in seen} == {"goclaw-index-writer"}


def test_without_a_spare_core_writes_happen_in_the_callers_thread_in_order() -> None:
    """A busy machine: the batch is written by the caller, after the ones already queued."""
    seen: list[tuple[int, str]] = []
    spare = iter([True, True, False, True, False])

    def slow(i: int) -> int:
        time.sleep(0.05)
        seen.append((i, threading.current_thread().name))
        return i

    with WriteBehind(slow, depth=2, overlap=lambda: next(spare)) as w:
        done = [n for i in range(1, 6) for n in w.submit(i)]
        done += w.finish()
    me = threading.current_thread().name
    assert seen == [
        (1, "goclaw-index-writer"),
        (2, "goclaw-index-writer"),
        (3, me),
        (4, "goclaw-index-writer"),
        (5, me),
    ]
    assert done == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    "running,cores,own,spare",
    [
        (1, 2, 1, True),
        (2, 2, 1, False),
        (2, 2, 2, True),
        (3, 4, 1, True),
        (1, 1, 1, False),
        (None, 2, 1, False),
    ],
)
def test_spare_core_counts_the_other_runnable_threads(
    monkeypatch: pytest.MonkeyPatch, running: int | None, cores: int, own: int, spare: bool
) -> None:
    monkeypatch.setattr(write_behind, "runnable", lambda: running)
    monkeypatch.setattr(write_behind, "cpus", lambda: cores)
    assert write_behind.spare_core(own) is spare


def test_the_runnable_count_includes_this_thread() -> None:
    from goclaw_search.sysload import cpus, runnable

    found = runnable()
    assert found is None or found >= 1  # None only where /proc/loadavg is missing
    assert cpus() >= 1


def test_a_failed_write_reaches_the_caller_and_stops_the_rest() -> None:
    written: list[int] = []

    def write_one(i: int) -> int:
        if i == 2:
            raise ValueError("disk full")
        written.append(i)
        return 1

    with pytest.raises(ValueError, match="disk full"), WriteBehind(write_one, overlap=always) as w:
        for i in range(1, 8):
            w.submit(i)
            time.sleep(0.01)
        w.finish()
    assert written == [1]


def test_a_caller_stopping_lets_the_write_under_way_finish_and_drops_the_queue() -> None:
    started, release, finished, slow = _held_writer()

    with pytest.raises(KeyboardInterrupt), WriteBehind(slow, overlap=always) as w:
        w.submit(1)
        w.submit(2)  # queued behind the first
        assert started.wait(5)
        threading.Timer(0.2, release.set).start()
        raise KeyboardInterrupt
    assert finished == [1]  # the first completed (its transaction whole), the queued one dropped


def _notes(root: Path, n: int, word: str) -> None:
    for i in range(n):
        write(root, f"memory/doc-{i:03d}.md", f"Version {word} of document {i}: {word.upper()}.\n")


def test_the_next_batch_is_prepared_while_one_is_written(
    engine: Any, monkeypatch: pytest.MonkeyPatch, spare_core: None
) -> None:
    """A batch's write waits until the next batch is being prepared: a run that wrote and then
    prepared in turn would never get there (the write would time out)."""
    engine.agents.create("ada")
    _notes(Path(engine.agent_dir(engine.agents.get("ada"))), 30, "one")
    monkeypatch.setattr(index_scan, "BATCH_DOCS", 10)
    prepared: list[int] = []
    next_prepared = threading.Event()
    overlapped: list[bool] = []
    real_ready, real_write = mod.MemoryIndexer._ready, mod.MemoryIndexer._write_batch

    def ready(batch: Any, vectors: Any) -> Any:
        prepared.append(len(batch))
        if len(prepared) == 2:
            next_prepared.set()
        return real_ready(batch, vectors)

    def write_batch(self: Any, *a: Any, **kw: Any) -> None:
        if not overlapped:
            overlapped.append(next_prepared.wait(10))
        real_write(self, *a, **kw)

    monkeypatch.setattr(mod.MemoryIndexer, "_ready", staticmethod(ready))
    monkeypatch.setattr(mod.MemoryIndexer, "_write_batch", write_batch)
    report = engine.memory.index("ada")
    assert overlapped == [True]
    assert report.rechunked == 30 and prepared == [10, 10, 10]
    assert len(engine.memory.search("ONE", "ada", channel="lexical", limit=100)) == 30


@pytest.mark.parametrize("spare", [True, False])
def test_an_interrupt_while_preparing_leaves_whole_documents(
    engine: Any, monkeypatch: pytest.MonkeyPatch, spare: bool
) -> None:
    """Ctrl-C while batch 3 is prepared: the batches handed to the writer are written whole or
    not at all, the rest keep their old version, and the next run completes the job."""
    monkeypatch.setattr(write_behind, "spare_core", lambda *_own: spare)
    engine.agents.create("ada")
    root = Path(engine.agent_dir(engine.agents.get("ada")))
    _notes(root, 50, "one")
    engine.memory.index("ada")
    _notes(root, 50, "two")
    monkeypatch.setattr(index_scan, "BATCH_DOCS", 10)
    calls: list[int] = []
    real_ready = mod.MemoryIndexer._ready

    def ready(batch: Any, vectors: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_ready(batch, vectors)

    monkeypatch.setattr(mod.MemoryIndexer, "_ready", staticmethod(ready))
    with pytest.raises(KeyboardInterrupt):
        engine.memory.index("ada")
    assert not [t for t in threading.enumerate() if t.name == "goclaw-index-writer"]
    monkeypatch.setattr(mod.MemoryIndexer, "_ready", staticmethod(real_ready))
    new = engine.memory.search("TWO", "ada", channel="lexical", limit=100)
    old = engine.memory.search("ONE", "ada", channel="lexical", limit=100)
    # The batch being written when the interrupt came is whole; one still queued was dropped.
    assert len(new) in (10, 20) and len(new) + len(old) == 50
    report = engine.memory.index("ada")
    assert report.rechunked == 50 - len(new) and report.skipped_unchanged == len(new)
    assert len(engine.memory.search("TWO", "ada", channel="lexical", limit=100)) == 50
    assert engine.memory.search("ONE", "ada", channel="lexical", limit=100) == []


def test_insert_many_writes_the_rows_of_executemany_in_few_statements() -> None:
    """Multi-row INSERTs (the writer thread waits for the GIL once a statement, not once a row)
    store exactly what executemany stores, upserts included."""
    from sqlalchemy import create_engine

    from goclaw_memory.index_writes import _rows_per_statement, insert_many

    rows = [(i, f"path-{i % 4100}", "x" * (i % 7), None if i % 5 else b"\x00\x01") for i in range(5_000)]
    sql = (
        "INSERT INTO t (n, path, body, blob) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (path) DO UPDATE SET n = excluded.n, body = excluded.body"
    )
    tables = []
    for many in (False, True):
        with create_engine("sqlite://").connect() as conn:
            conn.exec_driver_sql(
                "CREATE TABLE t (id INTEGER PRIMARY KEY, n INT, path TEXT UNIQUE, body, blob)"
            )
            statements: list[str] = []
            conn.connection.driver_connection.set_trace_callback(statements.append)  # type: ignore[union-attr]
            if many:
                insert_many(conn, sql, rows, multi_row=True)
            else:
                conn.exec_driver_sql(sql, rows)
            conn.connection.driver_connection.set_trace_callback(None)  # type: ignore[union-attr]
            tables.append(conn.exec_driver_sql("SELECT * FROM t ORDER BY id").all())
        statements = [x for x in statements if x.startswith("INSERT")]
        if many:
            assert len(statements) == -(-len(rows) // _rows_per_statement(4)) <= 5
        else:
            assert len(statements) == len(rows)
    assert tables[0] == tables[1] and len(tables[0]) == 4_100
    with create_engine("sqlite://").connect() as conn, pytest.raises(ValueError, match="VALUES"):
        insert_many(conn, "INSERT INTO t SELECT ?", [(1,)], multi_row=True)


def test_a_second_ctrl_c_while_stopping_leaves_no_writer_behind() -> None:
    """Ctrl-C, then Ctrl-C again while the stop waits for the write under way (a user who
    presses it twice): the writer still finishes that write and ends, so the process can exit
    (it waited forever for a next item before: a non-daemon thread keeps the interpreter).

    The second Ctrl-C is raised where a real one lands, in the wait for the writer
    (``Thread.join``: a signal interrupts the blocked lock wait). ``_thread.interrupt_main``
    cannot wake that wait: its KeyboardInterrupt came after the write, at whatever Python code
    the main thread ran next, sometimes a weakref callback, which reports it as an
    "unraisable" warning instead of raising it (the full suite's intermittent warning)."""
    started, release, finished, slow = _held_writer()

    w = WriteBehind(slow, overlap=always)
    join = w._thread.join
    interrupted: list[bool] = []

    def second_ctrl_c(timeout: float | None = None) -> None:
        if not interrupted:
            interrupted.append(True)
            assert not release.is_set() and w._thread.is_alive()  # the write is still under way
            raise KeyboardInterrupt
        join(timeout)

    w._thread.join = second_ctrl_c  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt), w:  # the second interrupt lands in w's __exit__
        w.submit(1)
        w.submit(2)  # queued: the stop's hand-over waited behind it
        assert started.wait(5)
        raise KeyboardInterrupt
    assert interrupted
    release.set()
    join(3)
    assert not w._thread.is_alive() and finished == [1]


def test_insert_many_keeps_to_the_connections_own_parameter_limit() -> None:
    """SQLite's parameter limit is a build option (999 before 3.32 and wherever a build keeps
    that value; 32,766 is the default from 3.32 on): the statements are sized by the
    connection's own limit, not guessed from the version (a 999 build refuses larger batches:
    "too many SQL variables", and the index run would fail)."""
    import sqlite3

    from sqlalchemy import create_engine

    from goclaw_memory.index_writes import insert_many

    rows = [(i, f"path-{i}", "x" * (i % 7)) for i in range(1_000)]
    sql = "INSERT INTO t (n, path, body) VALUES (?, ?, ?)"
    with create_engine("sqlite://").connect() as conn:
        raw = conn.connection.driver_connection
        assert raw is not None
        raw.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
        conn.exec_driver_sql("CREATE TABLE t (id INTEGER PRIMARY KEY, n INT, path TEXT UNIQUE, body)")
        insert_many(conn, sql, rows, multi_row=True)
        assert conn.exec_driver_sql("SELECT n, path, body FROM t ORDER BY id").all() == rows
