"""The kernel's own ``goclaw`` commands, declared by import path.

``goclaw --help`` lists these lines, and a command's module is imported only when it runs. A
feature's commands are its plugin's: declared in the plugin's manifest (``COMMANDS``, see
:mod:`goclaw.plugins`) or by its ``goclaw_cli_commands`` hook, never here.

The kernel keeps the commands of its own mechanisms: ``init`` (the workspace and its config),
``plugins`` (the plugin manager), ``workers`` (the always-on event queue), ``agent``/``team``
(agents and teams are kernel rows every feature is scoped by) and ``forget`` (one user's erasure
across every plugin, through the ``goclaw_forget_rows`` hook). The transports, ``serve`` and
``mcp``, are the built-in plugins ``goclaw.http`` and ``goclaw.mcp``.
``tests/kernel/test_cli_commands.py`` checks each line, and each plugin's, against the command it names.
"""

from __future__ import annotations

from goclaw.contracts.commands import CommandSpec

KERNEL_COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("agent", "Create, list, summon and link agents.", "goclaw.cli.agents:agent_group"),
    CommandSpec("team", "Group agents into teams (drives TEAM.md).", "goclaw.cli.agents:team_group"),
    CommandSpec(
        "forget",
        "Erase a user's (or, with --agent alone, an agent's) files, index, sessions, episodic "
        "memory, KG facts and more (GDPR). A dry run unless --yes.",
        "goclaw.cli.forget:forget_cmd",
    ),
    CommandSpec(
        "init", "Create goclaw.toml, the workspace folders and the database.", "goclaw.cli.workspace:init_cmd"
    ),
    CommandSpec(
        "plugins",
        "List plugins: name, distribution, version, hooks and status (active/blocked/failed).",
        "goclaw.cli.plugins:plugins_cmd",
    ),
    CommandSpec(
        "workers",
        "Run and inspect the consolidation workers and their durable queue.",
        "goclaw.cli.workers:workers_group",
        startup=True,
    ),
)
