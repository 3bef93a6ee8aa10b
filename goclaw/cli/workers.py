"""``goclaw workers run`` (issue 6 builds it)."""

from __future__ import annotations

import click

from goclaw.cli.common import not_yet


@click.group("workers")
def workers_group() -> None:
    """Run the consolidation workers."""


@workers_group.command("run")
@click.option("--once", is_flag=True, help="Drain the queue and exit.")
def workers_run(once: bool) -> None:
    """Serve (or drain with --once) the consolidation queue."""
    not_yet("consolidation workers")


COMMANDS = [workers_group]
