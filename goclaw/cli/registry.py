"""Every built-in ``goclaw`` command, declared by import path (issue 13 item 3).

Like :data:`goclaw.plugins.DEFAULT_PLUGINS`, this names code without importing it: ``goclaw
--help`` lists these lines, and a command's module is imported only when it runs. A feature's
commands live in its plugin package and name the plugin that owns them, so with that plugin
disabled the kernel still knows whose command it is and says so in one line.

The kernel keeps the commands of its own mechanisms: ``init`` (the workspace and its config),
``plugins`` (the plugin manager), ``workers`` (the always-on event queue), ``agent``/``team``
(agents and teams are kernel rows every feature is scoped by), ``forget`` (one user's erasure
across every plugin, through the ``goclaw_forget_rows`` hook), and ``serve``/``mcp``
(transports that expose every service through its contract, whichever plugin provides it).
``tests/kernel/test_cli_commands.py`` checks each line against the command it names.
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
    CommandSpec("mcp", "Run an MCP server scoped to one agent (and user).", "goclaw.cli.mcp:mcp_cmd"),
    CommandSpec(
        "plugins",
        "List plugins: name, distribution, version, hooks and status (active/blocked/failed).",
        "goclaw.cli.plugins:plugins_cmd",
    ),
    CommandSpec(
        "serve",
        "Serve the HTTP API (OpenAPI docs at /docs). Create a token first: goclaw serve token create.",
        "goclaw.cli.serve:serve_group",
    ),
    CommandSpec(
        "workers",
        "Run and inspect the consolidation workers and their durable queue.",
        "goclaw.cli.workers:workers_group",
        startup=True,
    ),
)

# The built-in plugins' commands: the code sits in the plugin package named by ``target``.
DEFAULT_COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec(
        "files",
        "Read and write context files (AGENTS.md, SOUL.md, ...).",
        "goclaw_context_files.cli:files_group",
        plugin="goclaw.context_files",
    ),
    CommandSpec(
        "prompt",
        "Print the system prompt for an agent (and user).",
        "goclaw_prompt.cli:prompt_cmd",
        plugin="goclaw.prompt",
        startup=True,
    ),
    CommandSpec(
        "skills",
        "List, search, lint, add and grant skills.",
        "goclaw_skills.cli:skills_group",
        plugin="goclaw.skills",
        startup=True,
    ),
    CommandSpec(
        "memory",
        "Index, search, read and watch memory files (MEMORY.md, memory/**/*.md).",
        "goclaw_memory.cli.memory:memory_group",
        plugin="goclaw.memory",
        startup=True,
    ),
    CommandSpec(
        "eval",
        "Measure memory retrieval on labelled questions (JSONL; see docs/eval.md).",
        "goclaw_memory.cli.quality:eval_command",
        plugin="goclaw.memory",
    ),
    CommandSpec(
        "session",
        "Record session messages, end runs, list episodic summaries.",
        "goclaw_memory.cli.session:session_group",
        plugin="goclaw.memory",
    ),
    CommandSpec(
        "kg",
        "The temporal knowledge graph: entities, relations, dedup review.",
        "goclaw_kg.cli:kg_group",
        plugin="goclaw.kg",
    ),
    CommandSpec(
        "channel-memory",
        "Passive channel memory: opt-in per channel, redacted, reviewed before it is remembered.",
        "goclaw_channel_memory.cli:channel_group",
        plugin="goclaw.channel_memory",
    ),
)
