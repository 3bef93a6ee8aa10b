"""The kernel's own ``goclaw`` commands (:class:`~goclaw.contracts.commands.CommandSpec`), those
of its mechanisms: ``init`` (the workspace and its config), ``plugins`` (the plugin manager),
``workers`` (the always-on event queue), ``agent``/``team`` (kernel rows every feature is scoped
by) and ``forget`` (one user's erasure across every plugin). Every other command, the transports
``serve`` and ``mcp`` included, is a plugin's (declared in its manifest)."""

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
