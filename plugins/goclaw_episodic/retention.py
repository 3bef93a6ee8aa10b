"""Plugin ``goclaw.workers.retention``: the periodic prune of expired episodic rows
(90 days by default, ``episodic_ttl_days`` per agent).

It subscribes to no event; the worker runner calls :meth:`RetentionWorker.tick` at most once
per ``retention_interval_seconds`` (6 h) across every ``goclaw workers run`` process.
"""

from __future__ import annotations

import logging
from typing import Any

from goclaw import hookimpl
from goclaw_episodic.settings import settings_of
from goclaw_episodic.store import EpisodicStore

log = logging.getLogger("goclaw.episodic")


class RetentionWorker:
    name = "retention"
    event_types: frozenset[str] = frozenset()

    def tick_interval(self, engine: Any) -> float:
        return float(settings_of(engine).retention_interval_seconds)

    def handle(self, event: Any, engine: Any) -> None:  # subscribed to nothing
        return None

    def tick(self, engine: Any) -> int:
        if not engine.has_service("episodic"):  # goclaw.episodic is off: its tables may not exist
            return 0
        pruned = EpisodicStore(engine).prune_expired()
        if pruned:
            log.info("retention: pruned %d expired episodic summaries", pruned)
        return pruned


@hookimpl
def goclaw_consolidation_workers() -> list[Any]:
    return [RetentionWorker()]
