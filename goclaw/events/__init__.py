"""The durable event queue and the worker runner.

The queue is an outbox in the workspace database:

* :meth:`EventQueue.publish` inserts one ``events`` row plus one ``event_deliveries`` row per
  worker subscribed to the event type (``engine.hooks.consolidation_workers()``), **in the
  caller's transaction**: the event exists exactly when the caller's change commits. On
  PostgreSQL it also ``NOTIFY``s idle workers (delivered at commit, so never early).
* :meth:`EventQueue.claim` hands deliveries to one worker process. PostgreSQL uses
  ``SELECT ... FOR UPDATE SKIP LOCKED`` so many processes on many hosts never claim the same
  delivery; SQLite has one writer at a time (``BEGIN IMMEDIATE``), so the select-then-update
  claim is exclusive by construction. A claim counts as an attempt.
* A failed delivery returns to ``pending`` with exponential backoff (with jitter); after
  ``max_attempts`` it becomes ``dead`` (the dead-letter state) and stops blocking nothing:
  claims order by ``available_at`` so healthy events flow past a failing one.
* A worker that dies mid-event leaves its delivery ``processing``. It is taken back when its
  lease (``lease_seconds``) expires, or at once when the claimer ran on this host and its
  process is gone (:meth:`EventQueue.recover_orphans`). Handlers are idempotent (a
  ``source_id`` dedup), so a retry never duplicates anything.
* Processed rows are kept (``done`` with ``processed_at``) for inspection.

:class:`WorkerRunner` is what ``goclaw workers run`` and embedding applications use: it claims
deliveries for the workers it serves, calls ``worker.handle(event, engine)``, and records the
outcome. A handler raises :class:`DeferEvent` to be called again later without it counting as
a failure (the dreaming worker's debounce). A worker object may also expose ``tick_interval``
(seconds, or a callable taking the engine) and ``tick(engine)``: the runner calls ``tick`` at
most once per interval across all
processes (coordinated through ``worker_state``), e.g. the retention prune.
"""

from __future__ import annotations

from goclaw.events.listen import Listener, PgListener
from goclaw.events.queue import DeferEvent, EventQueue, QueuedEvent, QueueStats, host_name, new_worker_id
from goclaw.events.runner import RunReport, WorkerRunner

__all__ = [
    "DeferEvent",
    "EventQueue",
    "Listener",
    "PgListener",
    "QueueStats",
    "QueuedEvent",
    "RunReport",
    "WorkerRunner",
    "host_name",
    "new_worker_id",
]
