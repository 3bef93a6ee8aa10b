"""The worker runner (``goclaw workers run``): claims deliveries and calls the workers."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from goclaw.contracts.columns import utcnow
from goclaw.contracts.events import ConsolidationWorker, DeferEvent, QueuedEvent
from goclaw.contracts.host import Host
from goclaw.contracts.store import WorkerState
from goclaw.events.queue import TICK_SCOPE, EventQueue, new_worker_id

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

log = logging.getLogger(__name__)


@dataclass
class RunReport:
    """What one :meth:`WorkerRunner.run_once` pass did."""

    processed: int = 0
    failed: int = 0
    dead: int = 0
    deferred: int = 0
    recovered: int = 0
    ticks: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "processed": self.processed,
            "failed": self.failed,
            "dead": self.dead,
            "deferred": self.deferred,
            "recovered": self.recovered,
            "ticks": list(self.ticks),
        }


class _Engine(Host, Protocol):
    """What the runner uses of its engine: the host, with its event queue as the kernel's
    (claims and outcomes, not only publishing; a Protocol: the engine imports this package)."""

    @property
    def events(self) -> EventQueue: ...


class WorkerRunner:
    """Serve the consolidation queue for some (default: all) workers in this process."""

    def __init__(
        self,
        engine: _Engine,
        queue: EventQueue | None = None,
        *,
        workers: Iterable[str] | None = None,
        batch_size: int = 10,
        poll_interval: float = 1.0,
        worker_id: str | None = None,
    ) -> None:
        self.engine = engine
        self.queue: EventQueue = queue if queue is not None else engine.events
        all_workers = {w.name: w for w in self.queue.workers()}
        if workers is not None:
            wanted = set(workers)
            unknown = sorted(wanted - set(all_workers))
            if unknown:
                from goclaw.errors import ValidationError

                raise ValidationError(
                    f"unknown worker(s) {', '.join(unknown)}; "
                    f"known: {', '.join(sorted(all_workers)) or 'none'}"
                )
            all_workers = {n: w for n, w in all_workers.items() if n in wanted}
        self.workers: dict[str, ConsolidationWorker] = all_workers
        self.batch_size = max(1, batch_size)
        self.poll_interval = max(0.05, poll_interval)
        self.worker_id = worker_id or new_worker_id()
        self.on_event: Callable[[QueuedEvent, str], None] | None = None

    # ------------------------------------------------------------------ one delivery
    def handle(self, event: QueuedEvent, report: RunReport) -> None:
        worker = self.workers[event.worker]
        try:
            worker.handle(event, self.engine)
        except DeferEvent as exc:
            self.queue.defer(event, exc.delay, str(exc))
            report.deferred += 1
            outcome = "deferred"
        except Exception as exc:
            log.warning(
                "worker %s failed on event %s (attempt %s): %s",
                event.worker,
                event.id,
                event.attempts,
                exc,
                exc_info=log.isEnabledFor(logging.DEBUG),
            )
            status = self.queue.fail(event, f"{type(exc).__name__}: {exc}")
            if status == "dead":
                report.dead += 1
            else:
                report.failed += 1
            outcome = status
        except BaseException:
            # Ctrl-C / SystemExit mid-event: give the delivery back untouched, then stop.
            self.queue.release(event)
            raise
        else:
            self.queue.complete(event)
            report.processed += 1
            outcome = "done"
        if self.on_event is not None:
            self.on_event(event, outcome)

    # ------------------------------------------------------------------ passes
    def run_once(self, *, max_events: int | None = None) -> RunReport:
        """Recover orphans, run due ticks, then drain every delivery available now."""
        report = RunReport()
        report.recovered = self.queue.recover_orphans()
        report.ticks = self.run_due_ticks()
        handled = 0
        while max_events is None or handled < max_events:
            batch = self.queue.claim(self.worker_id, self.batch_size, self.workers)
            if not batch:
                break
            for event in batch:
                self.handle(event, report)
                handled += 1
        return report

    def serve(self, stop: threading.Event | None = None) -> None:
        """Run until ``stop`` is set (or forever), sleeping on LISTEN/poll while idle."""
        listener = self.queue.listener()
        try:
            while stop is None or not stop.is_set():
                report = self.run_once()
                busy = report.processed + report.failed + report.dead + report.deferred
                if busy == 0:
                    listener.wait(self.poll_interval, stop)
        finally:
            listener.close()

    def run_due_ticks(self) -> list[str]:
        """Call ``tick(engine)`` on workers whose ``tick_interval`` has elapsed (any process)."""
        ran: list[str] = []
        for name, worker in sorted(self.workers.items()):
            interval = getattr(worker, "tick_interval", None)
            if callable(interval):
                interval = interval(self.engine)
            tick = getattr(worker, "tick", None)
            if not interval or not callable(tick):
                continue
            if self._claim_tick(name, float(interval)):
                try:
                    tick(self.engine)
                except Exception as exc:
                    log.warning("periodic job of worker %s failed: %s", name, exc)
                    continue
                ran.append(name)
        return ran

    def _claim_tick(self, name: str, interval: float) -> bool:
        def _do(session: Session) -> bool:
            now = utcnow()
            state = session.get(WorkerState, (name, TICK_SCOPE), with_for_update=True)
            if state is not None:
                last = _parse_time(state.value.get("last"))
                if last is not None and (now - last).total_seconds() < interval:
                    return False
                state.value = {**state.value, "last": now.isoformat()}
                state.updated_at = now
            else:
                state = WorkerState(worker=name, scope=TICK_SCOPE, value={"last": now.isoformat()})
            session.add(state)
            return True

        try:
            return self.engine.db.run_write(_do)
        except Exception:  # two processes creating the row at once: the other one ticks
            log.debug("tick claim for %s lost a race", name, exc_info=True)
            return False


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        from datetime import UTC

        parsed = parsed.replace(tzinfo=UTC)
    return parsed
