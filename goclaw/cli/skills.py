"""``goclaw skills ...`` (issue 4 builds them)."""

from __future__ import annotations

import click

from goclaw.cli.common import not_yet


@click.group("skills")
def skills_group() -> None:
    """List, search, lint, add and grant skills."""


@skills_group.command("list", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def skills_list(args: tuple[str, ...]) -> None:
    """List skills with their winning tier."""
    not_yet("skills")


COMMANDS = [skills_group]
