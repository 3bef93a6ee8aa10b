"""Shared CLI plumbing: the lazily opened engine, JSON output, tables, errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

if TYPE_CHECKING:
    from goclaw.engine import Engine
    from goclaw.errors import GoclawError

F = TypeVar("F", bound=Callable[..., Any])


class CliState:
    """Carried in ``click.Context.obj``: global options and the engine, opened on demand."""

    def __init__(self, workspace: Path, database_url: str | None) -> None:
        self.workspace = workspace
        self.database_url = database_url
        self._engine: Engine | None = None

    def engine(self, **kwargs: Any) -> Engine:
        if self._engine is None:
            from goclaw.engine import Engine

            self._engine = Engine.open(self.workspace, self.database_url, **kwargs)
        return self._engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None


def state() -> CliState:
    obj = click.get_current_context().find_object(CliState)
    if obj is None:  # pragma: no cover - the root group always sets it
        raise RuntimeError("no CLI state")
    return obj


# Command groups whose work benefits from the start-up hooks (e.g. the skill-embedding
# backfill, spec §11). Other commands skip them: a one-shot `agent list` should not pay for
# scanning skill tiers and loading an embedding model.
STARTUP_COMMANDS = frozenset({"skills", "prompt", "workers", "memory"})


def engine() -> Engine:
    ctx = click.get_current_context()
    root = ctx.find_root()
    group = root.invoked_subcommand or ""
    return state().engine(startup=group in STARTUP_COMMANDS)


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")(f)


def agent_option(required: bool = True) -> Callable[[F], F]:
    return click.option("--agent", "-a", required=required, help="Agent name.")


def user_option(help: str = "User id (omit for the agent level).") -> Callable[[F], F]:
    return click.option("--user", "-u", default=None, help=help)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def print_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> None:
    """A rich table on a terminal; tab-separated lines when piped (stable for scripts)."""
    if not sys.stdout.isatty():
        for row in rows:
            click.echo("\t".join("" if v is None else str(v) for v in row))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for col in columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    Console().print(table)


def fail(exc: GoclawError) -> NoReturn:
    click.echo(f"error: {exc}", err=True)
    sys.exit(exc.exit_code)
