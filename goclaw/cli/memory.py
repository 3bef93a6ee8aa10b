"""``goclaw memory ...`` (issue 5 builds them)."""

from __future__ import annotations

import click

from goclaw.cli.common import not_yet


@click.group("memory")
def memory_group() -> None:
    """Index, search, read and watch memory files."""


@memory_group.command("index", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def memory_index(args: tuple[str, ...]) -> None:
    """Index memory files."""
    not_yet("memory")


COMMANDS = [memory_group]
