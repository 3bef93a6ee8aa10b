"""What a plugin needs to write ``goclaw`` commands (``goclaw_cli_commands``): the host of the
running command, the shared options, and the two output shapes (one JSON document, or a table).

The host comes from the click context: the ``goclaw`` root group puts an object with a
``host()`` method in ``ctx.obj``, which opens the engine on first use (with the start-up hooks
only when the command's declaration asks for them). A command calls :func:`engine` and never
opens one itself.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["agent_option", "emit_json", "engine", "json_option", "print_table", "user_option", "workspace"]


def engine() -> Host:
    """The host (the open engine) of the running command."""
    ctx: click.Context | None = click.get_current_context()
    while ctx is not None:
        opener = getattr(ctx.obj, "host", None)
        if callable(opener):
            return cast("Host", opener())
        ctx = ctx.parent
    raise RuntimeError("no goclaw host on the click context: run the command under `goclaw`")


def workspace() -> Path:
    """The workspace folder of the running command (``goclaw --workspace``), engine left closed."""
    root = click.get_current_context().find_root()
    return Path(getattr(root.obj, "workspace", None) or ".").expanduser().resolve()


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
