"""``goclaw memory add|correct|delete|list``: the memory write API on the CLI.

Without ``--user`` the agent-level memory is written; with it, that user's own. ``TEXT`` of
``-`` (or no TEXT) reads stdin.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from goclaw.contracts.cli import emit_json, engine, json_option, user_option
from goclaw.errors import ValidationError


def _text(text: str | None) -> str:
    if text is None or text == "-":
        if sys.stdin.isatty():
            raise ValidationError("give the memory as TEXT, or pipe it on stdin")
        return sys.stdin.read()
    return text


def _meta(pairs: tuple[str, ...], meta_json: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if meta_json:
        try:
            loaded = json.loads(meta_json)
        except ValueError as exc:
            raise ValidationError(f"--meta-json is not valid JSON ({exc})") from None
        if not isinstance(loaded, dict):
            raise ValidationError("--meta-json must be a JSON object")
        meta.update(loaded)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValidationError(f"--meta {pair!r}: use KEY=VALUE")
        meta[key] = value
    return meta


def _lines(path: str | None, from_line: int | None, to_line: int | None) -> tuple[int, int] | None:
    if path is None:
        if from_line is not None or to_line is not None:
            raise ValidationError("--from/--to need --path")
        return None
    if from_line is None:
        raise ValidationError("--path needs --from (and --to, default: the same line)")
    return (from_line, to_line if to_line is not None else from_line)


def _agent(eng: Any, agent: str | None) -> str:
    from goclaw_memory.cli.memory import _agent_name

    return _agent_name(eng, agent)


target_options = [
    click.option("--id", "id_", default=None, help="Memory id (from list) or memory_search hit id."),
    click.option("--path", default=None, help="Memory file path (as search shows it)."),
    click.option("--from", "from_line", type=click.IntRange(1), default=None, help="First line."),
    click.option("--to", "to_line", type=click.IntRange(1), default=None, help="Last line (inclusive)."),
]


def _with_target(f: Any) -> Any:
    for option in reversed(target_options):
        f = option(f)
    return f


@click.command("add")
@click.argument("text", required=False)
@click.option("--agent", "-a", default=None, help="Agent name (optional when there is one agent).")
@user_option("Write this user's memory (default: the agent level).")
@click.option("--tag", "-t", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--meta", "meta_pairs", multiple=True, help="Metadata KEY=VALUE (repeatable).")
@click.option("--meta-json", default=None, help="Metadata as one JSON object.")
@click.option("--date", "day", default=None, help="Dated file to append to (YYYY-MM-DD; default today, UTC).")
@json_option
def memory_add(
    text: str | None,
    agent: str | None,
    user: str | None,
    tags: tuple[str, ...],
    meta_pairs: tuple[str, ...],
    meta_json: str | None,
    day: str | None,
    as_json: bool,
) -> None:
    """Add a memory to memory/YYYY-MM-DD.md and index it at once."""
    eng = engine()
    entry = eng.memory.writer.add(
        _agent(eng, agent), _text(text), user, tags=list(tags), metadata=_meta(meta_pairs, meta_json), day=day
    )
    if as_json:
        emit_json(entry.as_json())
    else:
        done = "already stored as" if entry.existing else "added"
        where = "in" if entry.existing else "to"
        click.echo(f"{done} {entry.id} {where} {entry.path}:{entry.start_line}-{entry.end_line}")


@click.command("correct")
@click.argument("text", required=False)
@click.option("--agent", "-a", default=None, help="Agent name (optional when there is one agent).")
@user_option("Correct this user's memory (default: the agent level).")
@_with_target
@json_option
def memory_correct(
    text: str | None,
    agent: str | None,
    user: str | None,
    id_: str | None,
    path: str | None,
    from_line: int | None,
    to_line: int | None,
    as_json: bool,
) -> None:
    """Replace a memory (by --id, or --path with --from/--to) with TEXT; re-indexed."""
    eng = engine()
    result = eng.memory.writer.correct(
        _agent(eng, agent), _text(text), user, id=id_, path=path, lines=_lines(path, from_line, to_line)
    )
    if as_json:
        emit_json(result)
    else:
        click.echo(f"corrected {result['path']}:{result['start_line']}-{result['end_line']}")


@click.command("delete")
@click.option("--agent", "-a", default=None, help="Agent name (optional when there is one agent).")
@user_option("Delete from this user's memory (default: the agent level).")
@_with_target
@json_option
def memory_delete(
    agent: str | None,
    user: str | None,
    id_: str | None,
    path: str | None,
    from_line: int | None,
    to_line: int | None,
    as_json: bool,
) -> None:
    """Delete a memory (by --id, or --path with --from/--to); re-indexed."""
    eng = engine()
    result = eng.memory.writer.delete(
        _agent(eng, agent), user, id=id_, path=path, lines=_lines(path, from_line, to_line)
    )
    if as_json:
        emit_json(result)
    else:
        click.echo(f"deleted {result['removed_lines']} line(s) from {result['path']}")


@click.command("list")
@click.option("--agent", "-a", default=None, help="Agent name (optional when there is one agent).")
@user_option("List this user's memories (default: the agent level).")
@click.option("--tag", "-t", default=None, help="Only memories with this tag.")
@click.option("--limit", "-n", type=click.IntRange(1), default=None, help="At most this many.")
@json_option
def memory_list(
    agent: str | None, user: str | None, tag: str | None, limit: int | None, as_json: bool
) -> None:
    """List memories added through the API, newest first."""
    eng = engine()
    entries = eng.memory.writer.list(_agent(eng, agent), user, tag=tag, limit=limit)
    if as_json:
        emit_json([e.as_json() for e in entries])
        return
    if not entries:
        click.echo("no memories")
    for e in entries:
        tags = f"  #{' #'.join(e.tags)}" if e.tags else ""
        click.echo(f"{e.id}  {e.added}  {e.path}:{e.start_line}-{e.end_line}{tags}")
        click.echo(f"    {' '.join(e.text.split())[:160]}")


def add_write_commands(group: click.Group) -> None:
    for command in (memory_add, memory_correct, memory_delete, memory_list):
        group.add_command(command)
