"""``goclaw session ...`` (issue 6 builds them)."""

from __future__ import annotations

import click

from goclaw.cli.common import not_yet


@click.group("session")
def session_group() -> None:
    """Record session messages and end runs."""


@session_group.command("append", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def session_append(args: tuple[str, ...]) -> None:
    """Append a message to a session."""
    not_yet("sessions")


COMMANDS = [session_group]
