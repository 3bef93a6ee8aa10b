"""The ``goclaw`` command line.

Global options come before the command: ``goclaw --workspace DIR --database-url URL <command>``.
Every listing command takes ``--json`` and then prints one JSON document on stdout and nothing
else. User mistakes print ``error: <one line>`` on stderr and exit non-zero, never a traceback.
Module imports stay light so that ``goclaw --help`` is fast; the engine opens on first use.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

import click

from goclaw.cli.common import CliState, fail, input_error, non_utf8_argument, shown
from goclaw.cli.lazy import LazyGroup
from goclaw.cli.registry import KERNEL_COMMANDS
from goclaw.contracts.commands import CommandSpec
from goclaw.errors import GoclawError


@click.group(
    cls=LazyGroup,
    specs=KERNEL_COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--workspace",
    "-w",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    envvar="GOCLAW_WORKSPACE",
    help="Workspace folder (default: current folder, or $GOCLAW_WORKSPACE).",
)
@click.option(
    "--database-url",
    default=None,
    help="Database URL; overrides goclaw.toml (default: SQLite in .goclaw/goclaw.db).",
)
@click.version_option(package_name="goclaw", prog_name="goclaw")
@click.pass_context
def cli(ctx: click.Context, workspace: Path | None, database_url: str | None) -> None:
    """goclaw: the context engine for AI agents.

    Bootstrap files, skills and long-term memory that shape a model's context before each turn.
    """
    state = CliState(workspace or Path("."), database_url)
    ctx.obj = state
    ctx.call_on_close(state.close)


def _add_plugin_commands(argv: list[str]) -> None:
    """Collect every installed plugin's commands: declared in its manifest (read without
    importing the plugin, whether it is enabled or not), or, for a distribution that ships no
    manifest, by its ``goclaw_cli_commands`` hook (lazy) or ``goclaw_register_commands`` hook
    (eager, kept for compatibility); those plugins are loaded under the workspace's
    ``[plugins]`` settings. Best effort: a broken config or plugin must not break ``--help``;
    the real error surfaces when a command runs.
    """
    from goclaw.plugins import discover

    cli.clear_plugin_specs()
    installed = discover()
    cli.installed = installed
    contributions: list[tuple[str, CommandSpec]] = []
    for p in installed.plugins.values():
        try:
            contributions.extend((p.name, spec) for spec in p.commands())
        except GoclawError:
            if p.builtin:
                raise
    declaring = {p.distribution for p in installed.plugins.values() if p.manifest is not None}
    unread = [n for n, p in installed.plugins.items() if p.distribution not in declaring]
    workspace = Path(os.environ.get("GOCLAW_WORKSPACE", "."))
    for i, arg in enumerate(argv):
        if arg in ("--workspace", "-w") and i + 1 < len(argv):
            workspace = Path(argv[i + 1])
        elif arg.startswith("--workspace="):
            workspace = Path(arg.split("=", 1)[1])

    @functools.cache
    def config() -> Any:
        """The workspace's ``[plugins]`` settings, read once on first use; None when they cannot
        be read (the command that runs reports why)."""
        from goclaw.config import load_settings

        try:
            return load_settings(workspace.resolve()).plugins
        except GoclawError:
            return None

    hooks = None
    if unread and config() is not None:
        from goclaw.hooks import Hooks
        from goclaw.plugins import GoclawPluginManager

        try:
            manager = GoclawPluginManager(config(), installed=installed, select=unread)
            manager.load()
            hooks = Hooks(manager)
            contributions.extend(hooks.cli_commands())
        except GoclawError:
            hooks = None

    def reason(plugin: str) -> str | None:
        from goclaw.cli.lazy import block_reason

        settings = config() if may_block else None
        return None if settings is None else block_reason(settings, plugin, installed)

    # Reading the settings costs pydantic: `goclaw --help` pays it only when a plugin may be
    # blocked (a replacement installed, a plugins key set in goclaw.toml or the environment).
    toml = workspace / "goclaw.toml"
    try:
        lines = toml.read_text("utf-8", "replace").splitlines() if toml.is_file() else []
    except OSError:
        lines = ["only ="]  # unreadable: the settings say more (or the command reports it)
    may_block = (
        bool(installed.replaced)
        or any(re.match(r"\s*[^#]*\b(disable|only|autoload)\s*=", line) for line in lines)
        or any(n.upper().startswith(("GOCLAW_PLUGINS", "GOCLAW_DISABLE_PLUGIN")) for n in os.environ)
    )

    builtins = {n for n, p in installed.plugins.items() if p.builtin}
    cli.set_plugin_specs(contributions, reason, builtins)
    if hooks is not None:
        hooks.register_commands(cli)


cli.collect = _add_plugin_commands


class _WarningLines(logging.Handler):
    """The CLI's ``logging.lastResort``: with no logging configured (the normal CLI case), a
    warning from any module is one line ``warning: ...`` on the current stderr, the same shape
    as ``error: ...``. A configured logging setup (``workers run -v``, an embedding app) is
    untouched, because ``lastResort`` only runs when no handler exists."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                exc = record.exc_info[1]
                msg += f" ({type(exc).__name__}: {exc})"
            sys.stderr.write(f"{record.levelname.lower()}: {' '.join(msg.split())}\n")
        except Exception:  # pragma: no cover - logging must never break the command
            self.handleError(record)


def main(argv: list[str] | None = None) -> Any:
    """Console-script entry point."""
    previous = logging.lastResort
    logging.lastResort = _WarningLines()
    try:
        return _main(argv)
    finally:
        logging.lastResort = previous


def _main(argv: list[str] | None) -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    args = list(sys.argv[1:] if argv is None else argv)
    bad_argument = non_utf8_argument(args)
    if bad_argument is not None:
        click.echo(f"error: {bad_argument}", err=True)
        sys.exit(2)
    _add_plugin_commands(args)
    try:
        result = cli.main(args=args, prog_name="goclaw", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.UsageError as exc:
        hint = f" (see: {exc.ctx.command_path} --help)" if exc.ctx is not None else ""
        click.echo(f"error: {' '.join(exc.format_message().split())}{hint}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"error: {' '.join(exc.format_message().split())}", err=True)
        sys.exit(exc.exit_code)
    except GoclawError as exc:
        if os.environ.get("GOCLAW_DEBUG") and exc.__cause__ is not None:
            raise  # one that wraps another failure (a plugin's): show where that came from
        fail(exc)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except OSError as exc:
        # Disk full, read-only workspace, permission denied: a user-level problem.
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        click.echo(f"error: {exc.strerror or exc}{where}", err=True)
        sys.exit(5)
    except (OverflowError, UnicodeError, RecursionError) as exc:
        # Garbage in (a huge number, bytes that are not UTF-8, absurd nesting): a user mistake.
        if os.environ.get("GOCLAW_DEBUG"):
            raise
        click.echo(f"error: {input_error(exc)}", err=True)
        sys.exit(2)
    except Exception as exc:
        # A bug, not a user mistake: say so on one line; GOCLAW_DEBUG=1 shows the traceback.
        if os.environ.get("GOCLAW_DEBUG"):
            raise
        hint = "set GOCLAW_DEBUG=1 for the traceback, and please report it"
        click.echo(f"error: internal error: {type(exc).__name__}: {shown(str(exc))} ({hint})", err=True)
        sys.exit(70)
    sys.exit(result if isinstance(result, int) else 0)
