"""``goclaw kg entities|relations`` (issue 6 builds them)."""

from __future__ import annotations

import click

from goclaw.cli.common import not_yet


@click.group("kg")
def kg_group() -> None:
    """Inspect the temporal knowledge graph."""


@kg_group.command("entities", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def kg_entities(args: tuple[str, ...]) -> None:
    """List knowledge-graph entities."""
    not_yet("the knowledge graph")


COMMANDS = [kg_group]
