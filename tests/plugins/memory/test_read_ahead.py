"""An index run reads batch N+1's chunks and vectors on a background thread while batch N is
tokenized (:func:`goclaw_memory.write_behind.read_ahead`, for indexing speed), with one
read-only cache connection for the whole run; the run's results are unchanged."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

import pytest

from goclaw_memory import embedding_cache, index_scan, write_behind
from goclaw_memory import indexer as mod
from goclaw_memory.write_behind import READER_THREAD, read_ahead
from goclaw_search import sysload
from tests.memory_helpers import write


def _readers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(READER_THREAD)]


def test_items_come_in_order_read_on_the_reader_thread() -> None:
    where: dict[int, str] = {}

    def read(i: int) -> int:
        where[i] = threading.current_thread().name
        return i * i

    assert list(read_ahead(range(6), read, overlap=lambda: True)) == [(i, i * i) for i in range(6)]
    assert all(name.startswith(READER_THREAD) for name in where.values())
    assert not _readers()


def test_without_a_spare_core_the_caller_reads_in_order() -> None:
    where: list[tuple[int, bool]] = []
    # asked once a step: one per item and one more for the step that finds the end
    spare = iter([True, False, False, True, False, True, False])

    def read(i: int) -> int:
        where.append((i, threading.current_thread() is threading.main_thread()))
        return -i

    got = list(read_ahead(range(6), read, overlap=lambda: next(spare)))
    assert got == [(i, -i) for i in range(6)]
    assert [i for i, _main in where] == list(range(6))
    assert [main for _i, main in where] == [False, True, True, False, True, False]


def test_the_next_read_runs_while_the_caller_works_on_this_item() -> None:
    """Item 1's read waits until the caller holds item 0: read in turn, it would time out."""
    holding = threading.Event()
    overlapped: list[bool] = []

    def read(i: int) -> int:
        if i == 1:
            overlapped.append(holding.wait(10))
        return i

    for i, _r in read_ahead(range(3), read, overlap=lambda: True):
        if i == 0:
            holding.set()
    assert overlapped == [True]


def test_a_failed_read_raises_where_its_item_would_come() -> None:
    def read(i: int) -> int:
        if i == 3:
            raise ValueError("disk gone")
        return i

    got = []
    with pytest.raises(ValueError, match="disk gone"):
        for i, _r in read_ahead(range(6), read, overlap=lambda: True):
            got.append(i)
    assert got == [0, 1, 2]
    assert not _readers()


def test_stopping_early_waits_for_the_read_under_way_and_starts_no_other() -> None:
    started, release = threading.Event(), threading.Event()
    done: list[int] = []

    def read(i: int) -> int:
        if i == 1:
            started.set()
            release.wait(10)
        done.append(i)
        return i

    gen = read_ahead(range(10), read, overlap=lambda: True)
    assert next(gen) == (0, 0)
    assert started.wait(10)
    threading.Timer(0.1, release.set).start()
    gen.close()  # returns once read(1) ended
    assert done == [0, 1]  # nothing after the one under way
    assert not _readers()


def test_own_running_counts_this_process_s_busy_threads() -> None:
    """A thread hashing a large buffer runs without the GIL: two of this process's threads
    are then running at once."""
    seen = sysload.own_running()
    assert seen is not None and seen >= 1
    stop = threading.Event()
    data = b"x" * (8 << 20)

    def busy() -> None:
        while not stop.is_set():
            hashlib.sha256(data).digest()

    thread = threading.Thread(target=busy)
    thread.start()
    try:
        most = max(sysload.own_running() or 0 for _ in range(200))
    finally:
        stop.set()
        thread.join()
    assert most >= 2


CASES = [(3, 3, True), (3, 2, False), (2, 1, False), (1, 1, True)]  # runnable, own running, spare


@pytest.mark.parametrize(("running", "own", "spare"), CASES)
def test_spare_core_subtracts_this_process_s_running_threads(
    monkeypatch: pytest.MonkeyPatch, running: int, own: int, spare: bool
) -> None:
    monkeypatch.setattr(write_behind, "runnable", lambda: running)
    monkeypatch.setattr(write_behind, "cpus", lambda: 2)
    monkeypatch.setattr(write_behind, "own_running", lambda: own)
    assert write_behind.spare_core() is spare


def test_an_index_run_reads_ahead_with_one_cache_connection(
    engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three batches from the embedding cache: their vectors read on the reader thread, through
    one read-only connection opened and closed by the run; the index is the same as read in
    the caller's thread."""
    monkeypatch.setattr(write_behind, "spare_core", lambda *_own: True)
    monkeypatch.setattr(index_scan, "BATCH_DOCS", 10)
    engine.agents.create("ada")
    root = Path(engine.agent_dir(engine.agents.get("ada")))
    for i in range(30):
        write(root, f"memory/doc-{i:03d}.md", f"Note {i}: the harbour ledger TCK-{4400 + i} closed.\n")
    first = engine.memory.index("ada")
    assert first.chunks_written == 30
    opened: list[Any] = []
    real_reader = embedding_cache._reader

    def counting(eng: Any) -> Any:
        conn = real_reader(eng)
        opened.append(conn)
        return conn

    threads: list[str] = []
    real_vectors = mod.MemoryIndexer._vectors

    def vectors(self: Any, *a: Any, **kw: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real_vectors(self, *a, **kw)

    monkeypatch.setattr(embedding_cache, "_reader", counting)
    monkeypatch.setattr(mod.MemoryIndexer, "_vectors", vectors)
    for i in range(30):  # every file changes; every chunk's text is in the cache already
        write(root, f"memory/doc-{i:03d}.md", f"Note {i}: the harbour ledger TCK-{4400 + i} closed.\n\n")
    report = engine.memory.index("ada")
    assert report.rechunked == 30 and report.cache_hits == 30 and report.chunks_embedded == 0
    assert len(threads) == 3 and all(t.startswith(READER_THREAD) for t in threads)
    if engine.db.backend == "postgresql":
        assert opened == []  # the pool's connections read the cache there
    else:
        assert len(opened) == 1 and opened[0] is not None
        with pytest.raises(Exception, match="closed"):
            opened[0].execute("SELECT 1")
    hits = engine.memory.search("TCK-4417", "ada", limit=3)
    assert hits and "TCK-4417" in hits[0].snippet
