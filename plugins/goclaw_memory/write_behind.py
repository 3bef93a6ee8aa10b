"""Writing one batch while the next is prepared (issue 11: indexing speed).

An index run prepares each batch (chunking, vectors, tokenizing: Python, holding the GIL) and
writes it (SQL: the SQLite and PostgreSQL drivers release the GIL while the database works,
and a commit waits on the disk). :class:`WriteBehind` runs the writes, in order, on one
background thread, so batch N+1 is prepared while batch N is written: on two cores most of
the database's time is hidden.

Nothing about a transaction changes: the same transactions, one at a time, from one thread.
When the caller stops early (an exception, Ctrl-C) the write under way finishes (its
transaction commits or rolls back whole) and the batches still queued are dropped, as if the
run had stopped before them; when a write fails, the caller gets its exception at its next
call and nothing after it is written.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Generic, TypeVar

T = TypeVar("T")

_END = object()


class WriteBehind(Generic[T]):
    """``write(item)`` for each :meth:`submit`-ted item, in order, on one background thread;
    at most ``depth`` items wait. Use as a context manager and call :meth:`finish` at the end
    of a successful run. ``write`` returns a count (e.g. files written), handed back by
    :meth:`submit` and :meth:`finish` once written."""

    def __init__(self, write: Callable[[T], int], *, depth: int = 1) -> None:
        self._write = write
        self._todo: queue.Queue[object] = queue.Queue(maxsize=depth)
        self._done: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._stop = threading.Event()
        # Not a daemon: an interpreter exiting meanwhile still lets the write under way finish.
        self._thread = threading.Thread(target=self._run, name="goclaw-index-writer")

    def __enter__(self) -> WriteBehind[T]:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is not None:
            self._stop.set()  # drop what is queued; the write under way completes
        self._close()

    def _run(self) -> None:
        while True:
            item = self._todo.get()
            if item is _END:
                return
            if self._stop.is_set() or self._error is not None:
                continue  # stopping: keep taking items so a caller's put never blocks
            try:
                self._done.put(self._write(item))  # type: ignore[arg-type]
            except BaseException as exc:  # handed to the caller's thread
                self._error = exc

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
        """Queue ``item`` (waiting while ``depth`` items are queued); returns the counts of the
        writes completed since the last call. Raises a failed write's exception."""
        self._check()
        self._todo.put(item)
        self._check()
        return self._written()

    def finish(self) -> list[int]:
        """Wait for every queued write; returns the counts of the writes completed since the
        last call. Raises a failed write's exception."""
        self._close()
        self._check()
        return self._written()
