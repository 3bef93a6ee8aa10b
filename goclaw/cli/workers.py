"""``goclaw workers run|status|events|retry``: the durable event queue's workers (plugins add
subcommands of their own: ``goclaw workers prune`` is the episodic plugin's)."""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

import click

from goclaw.cli.common import engine
from goclaw.cli.lazy import KernelGroup
from goclaw.contracts.cli import emit_json, json_option, print_table


@click.group("workers", cls=KernelGroup)
def workers_group() -> None:
    """Run and inspect the consolidation workers and their durable queue."""


@workers_group.command("run")
@click.option("--once", is_flag=True, help="Drain what is available now, then exit.")
@click.option("--worker", "only", multiple=True, help="Serve only this worker (repeatable).")
@click.option("--verbose", "-v", is_flag=True, help="Log each event.")
@json_option
def workers_run(once: bool, only: tuple[str, ...], verbose: bool, as_json: bool) -> None:
    """Serve (or drain with --once) the consolidation queue."""
    from goclaw.events import WorkerRunner

    eng = engine()
    cfg = eng.settings.events
    if verbose:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    runner = WorkerRunner(
        eng,
        eng.events,
        workers=only or None,
        batch_size=cfg.batch_size,
        poll_interval=cfg.poll_interval_seconds,
    )
    if not as_json:
        runner.on_event = lambda ev, outcome: click.echo(
            f"{ev.event_type} #{ev.id} -> {ev.worker}: {outcome}"
        )
    if once:
        report = runner.run_once()
        if as_json:
            emit_json(report.as_dict())
        else:
            click.echo(
                f"processed {report.processed}, retrying {report.failed}, dead {report.dead}, "
                f"deferred {report.deferred}"
            )
        return
    stop = threading.Event()

    def _stop(*_: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    click.echo(f"serving workers: {', '.join(sorted(runner.workers))} (Ctrl-C to stop)", err=True)
    try:
        runner.serve(stop)
    except KeyboardInterrupt:
        pass


@workers_group.command("status")
@json_option
def workers_status(as_json: bool) -> None:
    """Deliveries per worker and status."""
    eng = engine()
    stats = eng.events.stats().counts
    workers = {w.name: sorted(w.event_types) for w in eng.events.workers()}
    if as_json:
        emit_json({"workers": workers, "deliveries": stats})
        return
    rows = []
    for name in sorted(set(workers) | set(stats)):
        c = stats.get(name, {})
        rows.append(
            (
                name,
                ",".join(workers.get(name, [])),
                c.get("pending", 0),
                c.get("processing", 0),
                c.get("done", 0),
                c.get("dead", 0),
            )
        )
    print_table(["worker", "events", "pending", "processing", "done", "dead"], rows)


@workers_group.command("events")
@click.option("--status", type=click.Choice(["pending", "processing", "done", "dead"]), default=None)
@click.option("--worker", default=None)
@click.option("--limit", default=50, show_default=True)
@json_option
def workers_events(status: str | None, worker: str | None, limit: int, as_json: bool) -> None:
    """List deliveries with their events (dead letters with --status dead)."""
    rows = engine().events.deliveries(status=status, worker=worker, limit=limit)
    if as_json:
        emit_json(rows)
        return
    print_table(
        ["event", "type", "worker", "status", "attempts", "error"],
        [
            (
                r["event_id"],
                r["event_type"],
                r["worker"],
                r["status"],
                r["attempts"],
                (r["last_error"] or "")[:60],
            )
            for r in rows
        ],
    )


@workers_group.command("retry")
@click.option("--event", "event_id", type=int, default=None, help="Only this event.")
@click.option("--worker", default=None, help="Only this worker.")
@click.option("--replay", is_flag=True, help="Also replay deliveries already done.")
def workers_retry(event_id: int | None, worker: str | None, replay: bool) -> None:
    """Make dead (or, with --replay, done) deliveries run again."""
    n = engine().events.retry(event_id, worker, dead_only=not replay)
    click.echo(f"{n} deliveries queued again")
