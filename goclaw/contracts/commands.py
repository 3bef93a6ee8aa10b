"""CLI commands a plugin declares without importing them: in its manifest (``COMMANDS``,
:mod:`goclaw.plugins`), so the CLI names a disabled plugin's commands without importing it, or
from the hook ``goclaw_cli_commands``. ``goclaw --help`` lists them from these fields alone."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CommandSpec:
    """One lazily loaded command.

    ``name`` is the command as typed (``goclaw <name>``), or ``"<group> <name>"`` for a
    subcommand of a kernel group that takes them (``agent``, ``workers``); ``help`` is the one line ``goclaw
    --help`` shows (keep it equal to the first paragraph of the command's docstring);
    ``target`` is ``"module:attribute"`` of a ``click.Command`` or ``click.Group``, imported only
    when the command runs; ``plugin`` is the owning plugin's name (the kernel fills it in from
    the plugin's entry point; empty for the kernel's own commands); ``startup`` opens the engine
    with the start-up hooks (for example the skill-embedding backfill), which a one-shot command
    that does not search should skip.
    """

    name: str
    help: str
    target: str
    plugin: str = ""
    startup: bool = False

    def __post_init__(self) -> None:
        module, sep, attribute = self.target.partition(":")
        if not sep or not module or not attribute:
            raise ValueError(f"command {self.name!r}: target {self.target!r} is not 'module:attribute'")
