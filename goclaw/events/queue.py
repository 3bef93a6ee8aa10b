"""The durable event queue: :class:`EventQueue` (``engine.events``); see :mod:`goclaw.events`."""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import and_, func, or_, select, tuple_, update

from goclaw.contracts.columns import utcnow
from goclaw.contracts.events import ConsolidationWorker, DeferEvent, QueuedEvent
from goclaw.contracts.host import HookCalls, Host
from goclaw.store.models import Event, EventDelivery

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

from goclaw.events.identity import host_name as host_name  # re-exported: imported from here
from goclaw.events.identity import new_worker_id as new_worker_id  # re-exported
from goclaw.events.identity import pid_alive
from goclaw.events.listen import Listener, PgListener

log = logging.getLogger(__name__)

NOTIFY_CHANNEL = "goclaw_events"  # suffixed per schema: see EventQueue.channel
TICK_SCOPE = "__tick__"

_deliveries = EventDelivery.__table__  # type: ignore[attr-defined]
_events = Event.__table__  # type: ignore[attr-defined]


__all__ = [
    "TICK_SCOPE",
    "DeferEvent",
    "EventQueue",
    "QueueStats",
    "QueuedEvent",
    "host_name",
    "new_worker_id",
]


class _Hooks(HookCalls, Protocol):
    def consolidation_workers(self) -> list[ConsolidationWorker]: ...


class _Engine(Host, Protocol):
    """What the queue uses of its engine: the host, plus the workers the plugins contribute
    (a Protocol: the engine imports this module)."""

    @property
    def hooks(self) -> _Hooks: ...


@dataclass
class QueueStats:
    """Counts per worker and status (``goclaw workers status``)."""

    counts: dict[str, dict[str, int]] = field(default_factory=dict)

    def total(self, status: str) -> int:
        return sum(c.get(status, 0) for c in self.counts.values())


class EventQueue:
    """``engine.events``: publish, claim, complete, fail, inspect (module docstring)."""

    def __init__(
        self,
        engine: _Engine,
        *,
        max_attempts: int = 5,
        backoff_base: float = 2.0,
        backoff_max: float = 600.0,
        lease_seconds: float = 300.0,
    ) -> None:
        self.engine = engine
        self.max_attempts = max(1, max_attempts)
        self.backoff_base = max(0.0, backoff_base)
        self.backoff_max = max(0.0, backoff_max)
        self.lease_seconds = max(1.0, lease_seconds)
        self._channel: str | None = None

    @property
    def channel(self) -> str:
        """The NOTIFY channel of this database *schema*. Channels are database-wide in
        PostgreSQL, so deployments (or tests) sharing a database in different schemas would
        otherwise wake each other's workers."""
        if self._channel is None:
            import hashlib

            from sqlalchemy import text

            with self.engine.db.engine.connect() as conn:
                schema = str(conn.execute(text("SELECT current_schema()")).scalar() or "public")
            self._channel = f"{NOTIFY_CHANNEL}_{hashlib.sha256(schema.encode()).hexdigest()[:12]}"
        return self._channel

    # ------------------------------------------------------------------ subscriptions
    def workers(self) -> list[ConsolidationWorker]:
        return self.engine.hooks.consolidation_workers()

    def subscribers(self, event_type: str) -> list[str]:
        """Names of the workers subscribed to ``event_type``, sorted."""
        return sorted(w.name for w in self.workers() if event_type in w.event_types)

    # ------------------------------------------------------------------ publishing
    def publish(
        self,
        session: Session,
        event_type: str,
        payload: Mapping[str, Any],
        agent_id: str = "",
        user_id: str = "",
    ) -> int:
        """Insert the event and its deliveries in ``session``'s transaction; return its id."""
        event = Event(
            event_type=event_type, agent_id=agent_id or "", user_id=user_id or "", payload=dict(payload)
        )
        session.add(event)
        session.flush()
        assert event.id is not None
        now = utcnow()
        for worker in self.subscribers(event_type):
            session.add(EventDelivery(event_id=event.id, worker=worker, available_at=now))
        session.flush()
        if self.engine.db.backend == "postgresql":
            from sqlalchemy import text

            session.execute(text("SELECT pg_notify(:c, :t)"), {"c": self.channel, "t": event_type})
        return event.id

    def publish_now(
        self, event_type: str, payload: Mapping[str, Any], agent_id: str = "", user_id: str = ""
    ) -> int:
        """Publish in a transaction of its own."""
        return self.engine.db.run_write(
            lambda s: self.publish(s, event_type, payload, agent_id=agent_id, user_id=user_id)
        )

    # ------------------------------------------------------------------ claiming
    def _claimable(self, workers: Sequence[str], now: datetime) -> Any:
        stale = now - timedelta(seconds=self.lease_seconds)
        return and_(
            _deliveries.c.worker.in_(list(workers)),
            or_(
                and_(_deliveries.c.status == "pending", _deliveries.c.available_at <= now),
                and_(_deliveries.c.status == "processing", _deliveries.c.claimed_at < stale),
            ),
        )

    def claim(
        self, worker_id: str, limit: int = 10, workers: Iterable[str] | None = None
    ) -> list[QueuedEvent]:
        """Claim up to ``limit`` available deliveries for the named workers (all by default)."""
        names = sorted(set(workers) if workers is not None else {w.name for w in self.workers()})
        if not names or limit <= 0:
            return []

        def _do(session: Session) -> list[QueuedEvent]:
            now = utcnow()
            rows = session.execute(
                select(_deliveries.c.event_id, _deliveries.c.worker, _deliveries.c.attempts)
                .where(self._claimable(names, now))
                .order_by(_deliveries.c.available_at, _deliveries.c.event_id, _deliveries.c.worker)
                .limit(limit)
                .with_for_update(skip_locked=True)
            ).all()
            if not rows:
                return []
            exhausted = [(r.event_id, r.worker) for r in rows if r.attempts >= self.max_attempts]
            if exhausted:  # died while processing too often: a poison event that kills workers
                self._bury(session, exhausted, now)
            keys = [(r.event_id, r.worker) for r in rows if r.attempts < self.max_attempts]
            if not keys:
                return []
            session.execute(
                update(_deliveries)
                .where(tuple_(_deliveries.c.event_id, _deliveries.c.worker).in_(keys))
                .values(
                    status="processing",
                    claimed_by=worker_id,
                    claimed_at=now,
                    attempts=_deliveries.c.attempts + 1,
                )
            )
            attempts = {(r.event_id, r.worker): r.attempts + 1 for r in rows}
            return _claimed_events(session, keys, attempts, worker_id)

        return self.engine.db.run_write(_do)

    def _bury(self, session: Session, keys: list[tuple[int, str]], now: datetime) -> None:
        """Mark these deliveries dead: their workers died while processing them too often."""
        session.execute(
            update(_deliveries)
            .where(tuple_(_deliveries.c.event_id, _deliveries.c.worker).in_(keys))
            .values(
                status="dead",
                processed_at=now,
                last_error=f"worker died while processing ({self.max_attempts} attempts)",
            )
        )

    def _finish(self, event: QueuedEvent, values: dict[str, Any]) -> bool:
        """Update a delivery this worker still owns; False if another worker took it over."""

        def _do(session: Session) -> bool:
            result = session.execute(
                update(_deliveries)
                .where(
                    _deliveries.c.event_id == event.id,
                    _deliveries.c.worker == event.worker,
                    _deliveries.c.status == "processing",
                    _deliveries.c.claimed_by == event.claimed_by,
                )
                .values(**values)
            )
            return bool(getattr(result, "rowcount", 0))

        return self.engine.db.run_write(_do)

    def complete(self, event: QueuedEvent) -> bool:
        return self._finish(event, {"status": "done", "processed_at": utcnow(), "last_error": None})

    def backoff(self, attempts: int) -> float:
        """Seconds before attempt ``attempts + 1``: base·2^(attempts-1), capped, ±10% jitter."""
        delay = min(self.backoff_max, self.backoff_base * float(2 ** max(0, attempts - 1)))
        return float(delay * (0.9 + 0.2 * random.random()))

    def fail(self, event: QueuedEvent, error: str) -> str:
        """Record a failed attempt: back to ``pending`` with backoff, or ``dead``. Returns the status."""
        error = error[:4000]
        if event.attempts >= self.max_attempts:
            self._finish(event, {"status": "dead", "processed_at": utcnow(), "last_error": error})
            return "dead"
        available = utcnow() + timedelta(seconds=self.backoff(event.attempts))
        self._finish(
            event,
            {"status": "pending", "available_at": available, "claimed_by": None, "last_error": error},
        )
        return "pending"

    def defer(self, event: QueuedEvent, delay: float, reason: str = "") -> None:
        """Hand the delivery back for later without counting the attempt."""
        self._finish(
            event,
            {
                "status": "pending",
                "available_at": utcnow() + timedelta(seconds=delay),
                "claimed_by": None,
                "attempts": _deliveries.c.attempts - 1,
                "last_error": f"deferred: {reason}" if reason else None,
            },
        )

    def release(self, event: QueuedEvent) -> None:
        """Give a claimed delivery back untouched (graceful shutdown mid-event)."""
        self.defer(event, 0.0)

    def recover_orphans(self) -> int:
        """Return to ``pending`` the deliveries claimed by dead processes on this host."""
        prefix = f"{host_name()}:"

        def _do(session: Session) -> int:
            rows = session.execute(
                select(_deliveries.c.event_id, _deliveries.c.worker, _deliveries.c.claimed_by)
                .where(_deliveries.c.status == "processing", _deliveries.c.claimed_by.like(prefix + "%"))
                .with_for_update(skip_locked=True)
            ).all()
            dead_keys = []
            for row in rows:
                parts = str(row.claimed_by).split(":")
                try:
                    pid = int(parts[-2])
                except (ValueError, IndexError):
                    continue
                if not pid_alive(pid):
                    dead_keys.append((row.event_id, row.worker))
            if dead_keys:
                session.execute(
                    update(_deliveries)
                    .where(tuple_(_deliveries.c.event_id, _deliveries.c.worker).in_(dead_keys))
                    .values(
                        status="pending",
                        available_at=utcnow(),
                        claimed_by=None,
                        last_error="worker process died while processing",
                    )
                )
            return len(dead_keys)

        return self.engine.db.run_write(_do)

    # ------------------------------------------------------------------ operators
    def retry(self, event_id: int | None = None, worker: str | None = None, *, dead_only: bool = True) -> int:
        """Make deliveries claimable again (dead ones by default; ``dead_only=False`` replays done ones)."""
        statuses = ["dead"] if dead_only else ["dead", "done"]

        def _do(session: Session) -> int:
            stmt = update(_deliveries).where(_deliveries.c.status.in_(statuses))
            if event_id is not None:
                stmt = stmt.where(_deliveries.c.event_id == event_id)
            if worker is not None:
                stmt = stmt.where(_deliveries.c.worker == worker)
            result = session.execute(
                stmt.values(status="pending", attempts=0, available_at=utcnow(), claimed_by=None)
            )
            return int(getattr(result, "rowcount", 0) or 0)

        return self.engine.db.run_write(_do)

    def stats(self) -> QueueStats:
        with self.engine.db.session() as session:
            rows = session.execute(
                select(_deliveries.c.worker, _deliveries.c.status, func.count()).group_by(
                    _deliveries.c.worker, _deliveries.c.status
                )
            ).all()
        stats = QueueStats()
        for worker, status, count in rows:
            stats.counts.setdefault(worker, {})[status] = int(count)
        return stats

    def deliveries(
        self,
        *,
        status: str | None = None,
        worker: str | None = None,
        event_id: int | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """Deliveries with their event, newest first (``goclaw workers events``)."""
        stmt = (
            select(
                _deliveries, _events.c.event_type, _events.c.agent_id, _events.c.user_id, _events.c.payload
            )
            .join(_events, _events.c.id == _deliveries.c.event_id)
            .order_by(_deliveries.c.event_id.desc(), _deliveries.c.worker)
            .limit(limit)
        )
        if status:
            stmt = stmt.where(_deliveries.c.status == status)
        if worker:
            stmt = stmt.where(_deliveries.c.worker == worker)
        if event_id is not None:
            stmt = stmt.where(_deliveries.c.event_id == event_id)
        with self.engine.db.session() as session:
            rows = session.execute(stmt).mappings().all()
        return [dict(r) for r in rows]

    # ------------------------------------------------------------------ waiting
    def listener(self) -> Listener:
        """Something to block on while idle: LISTEN/NOTIFY on PostgreSQL, a sleep on SQLite."""
        if self.engine.db.backend == "postgresql":
            try:
                return PgListener(self.engine, self.channel)
            except Exception:  # no LISTEN (e.g. a pooler in transaction mode): poll instead
                log.debug("LISTEN unavailable; polling", exc_info=True)
        return Listener()


def _claimed_events(
    session: Session, keys: list[tuple[int, str]], attempts: dict[tuple[int, str], int], worker_id: str
) -> list[QueuedEvent]:
    """The claimed deliveries ``(event_id, worker)`` as :class:`QueuedEvent`, in ``keys`` order."""
    events = {
        e.id: e for e in session.execute(select(_events).where(_events.c.id.in_({k[0] for k in keys}))).all()
    }
    out: list[QueuedEvent] = []
    for event_id, worker in keys:
        e = events[event_id]
        out.append(
            QueuedEvent(
                id=e.id,
                event_type=e.event_type,
                agent_id=e.agent_id,
                user_id=e.user_id,
                payload=dict(e.payload or {}),
                created_at=e.created_at,
                worker=worker,
                attempts=attempts[(event_id, worker)],
                claimed_by=worker_id,
            )
        )
    return out
