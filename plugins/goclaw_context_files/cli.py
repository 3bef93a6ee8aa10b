"""``goclaw files get|set|list``: context files (agent level, or per user with ``--user``)."""

from __future__ import annotations

import sys

import click

from goclaw.contracts.cli import emit_json, engine, json_option, print_table
from goclaw.errors import ValidationError


@click.group("files")
def files_group() -> None:
    """Read and write context files (AGENTS.md, SOUL.md, ...)."""


@files_group.command("get")
@click.option("--agent", "-a", required=True, help="Agent name.")
@click.option("--user", "-u", default=None, help="User id (omit for the agent level).")
@click.argument("name")
def files_get(agent: str, user: str | None, name: str) -> None:
    """Print a context file."""
    content = engine().files.get(agent, name, user=user)
    sys.stdout.write(content if content.endswith("\n") or not content else content + "\n")


@files_group.command("set")
@click.option("--agent", "-a", required=True, help="Agent name.")
@click.option("--user", "-u", default=None, help="User id (omit for the agent level).")
@click.argument("name")
def files_set(agent: str, user: str | None, name: str) -> None:
    """Write a context file from standard input (the admin path)."""
    data = sys.stdin.buffer.read()
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError(f"{name}: standard input is not UTF-8 text") from None
    outcome = engine().files.set(agent, name, content, user=user)
    if outcome == "deleted":
        click.echo(f"deleted {name} (written empty)", err=True)
    else:
        click.echo(f"wrote {name} ({len(content):,} characters)", err=True)


@files_group.command("list")
@click.option("--agent", "-a", required=True, help="Agent name.")
@click.option("--user", "-u", default=None, help="User id (omit for the agent level).")
@json_option
def files_list(agent: str, user: str | None, as_json: bool) -> None:
    """List context files with their sizes."""
    infos = engine().files.list(agent, user=user)
    if as_json:
        emit_json([i.as_dict() for i in infos])
        return
    print_table(
        ["name", "chars", "level", "updated"],
        [(i.name, i.chars, i.level, i.updated_at.strftime("%Y-%m-%d %H:%M")) for i in infos],
    )
