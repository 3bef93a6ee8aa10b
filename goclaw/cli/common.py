"""Shared CLI plumbing of the kernel's commands: the lazily opened engine and errors (the options
and output helpers every command uses are :mod:`goclaw.contracts.cli`'s)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from goclaw.engine import Engine
    from goclaw.errors import GoclawError

__all__ = ["CliState", "engine", "fail", "input_error", "non_utf8_argument", "shown", "state"]


class CliState:
    """Carried in ``click.Context.obj``: global options and the engine, opened on demand
    (:meth:`host` is what :func:`goclaw.contracts.cli.engine` calls)."""

    def __init__(self, workspace: Path, database_url: str | None) -> None:
        self.workspace = workspace
        self.database_url = database_url
        self._engine: Engine | None = None

    def engine(self, **kwargs: Any) -> Engine:
        if self._engine is None:
            from goclaw.engine import Engine

            self._engine = Engine.open(self.workspace, self.database_url, **kwargs)
        return self._engine

    def host(self) -> Engine:
        """The engine for the running command. Commands whose declaration says ``startup``
        (their work benefits from the start-up hooks, e.g. the skill-embedding backfill) open
        it with them; the others skip them: a one-shot ``agent list`` should not pay
        for scanning skill tiers and loading an embedding model."""
        root = click.get_current_context().find_root()
        spec_of = getattr(root.command, "spec", None)
        spec = spec_of(root.invoked_subcommand or "") if spec_of is not None else None
        return self.engine(startup=bool(spec is not None and spec.startup))

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None


def state() -> CliState:
    obj = click.get_current_context().find_object(CliState)
    if obj is None:  # pragma: no cover - the root group always sets it
        raise RuntimeError("no CLI state")
    return obj


def engine() -> Engine:
    """The engine for the running command (:meth:`CliState.host`)."""
    return state().host()


def fail(exc: GoclawError) -> NoReturn:
    click.echo(f"error: {exc}", err=True)
    sys.exit(exc.exit_code)


def shown(text: str) -> str:
    """``text`` printable on one line whatever it holds (undecodable bytes as ``\\xNN``)."""
    try:
        printable = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that no byte decodes to
        printable = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return " ".join(printable.split())


def non_utf8_argument(args: Sequence[str]) -> str | None:
    """The one-line error for the first argument that is not valid UTF-8, or None.

    Python decodes the raw bytes of ``argv`` with ``surrogateescape``: an invalid byte becomes a
    lone surrogate, which fails later, deep inside (a database write, a file name). Refuse it at
    the entry instead.
    """
    for i, arg in enumerate(args, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return f"argument {i} is not valid UTF-8: '{shown(arg)}' (goclaw reads UTF-8 arguments only)"
    return None


def input_error(exc: BaseException) -> str | None:
    """The one-line message for an exception caused by what the user fed in, or None.

    Huge numbers (``--limit 10**30`` reaching the database), text that is not UTF-8 (standard
    input, a file, an environment variable) and input nested so deeply that a parser recursed
    out (TOML/JSON) are user mistakes, not bugs.
    """
    if isinstance(exc, OverflowError):
        return f"a number is out of range ({shown(str(exc))})"
    if isinstance(exc, UnicodeDecodeError):
        return f"input is not valid UTF-8 text (found byte {exc.object[exc.start : exc.start + 1]!r})"
    if isinstance(exc, UnicodeEncodeError):
        return f"input is not valid UTF-8 text (found '{shown(exc.object[exc.start : exc.end])}')"
    if isinstance(exc, RecursionError):
        return (
            "input nested too deeply (RecursionError); if yours is not, "
            "set GOCLAW_DEBUG=1 for the traceback and please report it"
        )
    return None
