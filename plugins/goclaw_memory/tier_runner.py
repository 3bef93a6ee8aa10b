"""The extra tiers (``goclaw_memory_search_extra``: episodic summaries, knowledge-graph facts)
searched beside a memory search's document search.

On PostgreSQL every tier reads its agent's change counter before it answers (a round trip,
~0.3 ms, ~1 ms for both built-in tiers at 100k chunks), while the document search waits on its
own reads: side by side a search costs about the longer of the two, not their sum. Elsewhere
(SQLite: a commit watch answers the tiers from memory) they run in the caller's thread, when
it asks for them, as they would without this module: a handoff would cost more than it saves.
So do they when every worker is busy: with that many searches at once, the callers' own threads
are the parallelism.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

WORKERS = 4  # searches whose tiers run beside them at once (per engine)


class TierRunner:
    """Starts a search's extra tiers (:meth:`start`); the caller asks for their hits later."""

    def __init__(self, engine: Host) -> None:
        self.engine = engine
        self._pool: ThreadPoolExecutor | None = None
        self._busy = 0
        self._lock = threading.Lock()
        self._tiers: bool | None = None  # whether any plugin implements the hook

    def start(self, search: Callable[[], list[Any]]) -> Callable[[], list[Any]]:
        """Run ``search`` (the tiers' hits) on a worker now, or in the caller's thread when
        the result is asked for; either way the function returned gives its hits (or raises
        its error)."""
        if self.engine.db.backend != "postgresql" or not self._has_tiers():
            return search
        with self._lock:
            if self._busy >= WORKERS:
                return search
            if self._pool is None:
                self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="goclaw-tiers")
                self.engine.on_close(self._pool.shutdown)
            self._busy += 1
        try:
            future = self._pool.submit(self._run, search)
        except RuntimeError:  # the engine closed meanwhile: its pool takes no more work
            self._done()
            return search
        return future.result

    def _run(self, search: Callable[[], list[Any]]) -> list[Any]:
        try:
            return search()
        finally:
            self._done()

    def _done(self) -> None:
        with self._lock:
            self._busy -= 1

    def _has_tiers(self) -> bool:
        if self._tiers is None:  # the plugins of an engine are fixed once it is open
            self._tiers = bool(self.engine.hooks.implementers("goclaw_memory_search_extra"))
        return self._tiers
