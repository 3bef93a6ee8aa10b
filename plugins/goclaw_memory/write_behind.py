"""Writing one batch while the next is prepared, for indexing speed.

An index run prepares each batch (chunking, vectors, tokenizing: Python, holding the GIL) and
writes it (SQL: the SQLite and PostgreSQL drivers release the GIL while the database works,
and a commit waits on the disk). :class:`WriteBehind` runs the writes, in order, on one
background thread, so batch N+1 is prepared while batch N is written: on two cores most of
the database's time is hidden.

Only when a core is spare: before each batch the machine's runnable count (Linux
``/proc/loadavg``) is read, and when other processes occupy the cores the batch is written in
the caller's thread instead (after the queued ones). On a busy machine the two threads only
take turns on one core and pay for the handoffs (measured: ~5 % slower at 100,000 chunks under
load 3-6), so there the run is sequential as before.

Nothing about a transaction changes: the same transactions, one at a time, in order.
When the caller stops early (an exception, Ctrl-C) the write under way finishes (its
transaction commits or rolls back whole) and the batches still queued are dropped, as if the
run had stopped before them; when a write fails, the caller gets its exception at its next
call and nothing after it is written.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Generic, TypeVar

from goclaw_search.sysload import cpus, own_running, runnable

T = TypeVar("T")
R = TypeVar("R")

_END = object()
WRITER_THREAD = "goclaw-index-writer"
READER_THREAD = "goclaw-index-reader"


def spare_core(own: int | None = None) -> bool:
    """Whether a core is free for another thread of this process: no runnable thread on the
    machine but this process's ``own`` running ones (default: counted,
    :func:`goclaw_search.sysload.own_running`, else 1), fewer than the cores
    (:func:`goclaw_search.sysload.runnable`). ``False`` where it cannot be read or with one core."""
    running, cores = runnable(), cpus()
    if running is None or cores < 2:
        return False
    if own is None:
        own = own_running() or 1
    return running - own < cores - 1


def read_ahead(
    items: Iterable[T], read: Callable[[T], R], *, overlap: Callable[[], bool] | None = None
) -> Generator[tuple[T, R], None, None]:
    """``(item, read(item))`` for each item, in order. While the caller works on one, the next
    item is taken from ``items`` and read on a background thread (when ``overlap()`` says a
    core is spare; else in the caller's thread when it asks for it), so ``items`` may itself
    be slow to produce (files read as they are asked for). ``items`` is advanced by one thread
    at a time, one step after the other. A failure (of ``read`` or of ``items``) raises where
    its item would have come. Stopping early (``close``, an exception in the caller) waits for
    the step under way, drops the rest, and leaves no thread behind."""
    if overlap is None:
        overlap = spare_core
    source = iter(items)

    def step() -> tuple[T, R] | None:
        for item in source:
            return item, read(item)
        return None

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=READER_THREAD)
    try:
        ahead: Future[tuple[T, R] | None] | None = pool.submit(step) if overlap() else None
        while True:
            got = step() if ahead is None else ahead.result()
            if got is None:
                return
            # The next step starts only now: the one before it has ended.
            ahead = pool.submit(step) if overlap() else None
            yield got
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class WriteBehind(Generic[T]):
    """``write(item)`` for each :meth:`submit`-ted item, in order, on one background thread
    while ``overlap()`` says so (default :func:`spare_core`), else in the caller's thread; at
    most ``depth`` items wait. Use as a context manager and call :meth:`finish` at the end
    of a successful run. ``write`` returns a count (e.g. files written), handed back by
    :meth:`submit` and :meth:`finish` once written."""

    def __init__(
        self, write: Callable[[T], int], *, depth: int = 1, overlap: Callable[[], bool] | None = None
    ) -> None:
        self._write = write
        self._overlap = overlap if overlap is not None else self._spare_core  # when to write behind
        self._busy = False  # the writer thread is in a write (one of this process's running threads)
        self._todo: queue.Queue[object] = queue.Queue(maxsize=depth)
        self._done: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._stop = threading.Event()
        # Not a daemon: an interpreter exiting meanwhile still lets the write under way finish.
        self._thread = threading.Thread(target=self._run, name=WRITER_THREAD)

    def __enter__(self) -> WriteBehind[T]:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is not None:
            self._stop.set()  # drop what is queued; the write under way completes
            self._drop_queued()  # so handing over the end never waits (a 2nd Ctrl-C cannot strand it)
        self._close()

    def _drop_queued(self) -> None:
        while True:
            try:
                self._todo.get_nowait()
            except queue.Empty:
                return
            self._todo.task_done()

    def _run(self) -> None:
        while True:
            item = self._todo.get()
            try:
                if item is _END:
                    return
                if self._stop.is_set() or self._error is not None:
                    continue  # stopping: keep taking items so a caller's put never blocks
                self._busy = True
                try:
                    self._done.put(self._write(item))  # type: ignore[arg-type]
                except BaseException as exc:  # handed to the caller's thread
                    self._error = exc
                finally:
                    self._busy = False
            finally:
                self._todo.task_done()

    def _spare_core(self) -> bool:
        return spare_core(own_running() or (2 if self._busy else 1))

    def _close(self) -> None:
        if self._thread.is_alive():
            self._todo.put(_END)
            self._thread.join()

    def _written(self) -> list[int]:
        out = []
        while True:
            try:
                out.append(self._done.get_nowait())
            except queue.Empty:
                return out

    def _check(self) -> None:
        if self._error is not None:
            self._stop.set()
            raise self._error

    def submit(self, item: T) -> list[int]:
        """Queue ``item`` (waiting while ``depth`` items are queued), or, when no core is spare,
        write it here once the queued ones are written; returns the counts of the writes
        completed since the last call. Raises a failed write's exception."""
        self._check()
        if self._overlap():
            self._todo.put(item)
        else:
            self._todo.join()  # the queued writes first: the same order
            self._check()
            self._done.put(self._write(item))
        self._check()
        return self._written()

    def finish(self) -> list[int]:
        """Wait for every queued write; returns the counts of the writes completed since the
        last call. Raises a failed write's exception."""
        self._close()
        self._check()
        return self._written()
