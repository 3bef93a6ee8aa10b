"""``goclaw hello``: imported only when the command runs (declared in ``goclaw_cli_commands``)."""

from __future__ import annotations

import click


@click.command("hello")
@click.argument("name", default="world")
def hello(name: str) -> None:
    """Say hello (from the goclaw-hello plugin)."""
    click.echo(f"hello, {name}")
