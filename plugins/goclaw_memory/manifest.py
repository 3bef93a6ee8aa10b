"""What goclaw reads of plugin ``goclaw.memory`` without importing it (its manifest: entry-point group
``goclaw.manifests``; the attributes are described in :mod:`goclaw.plugins`)."""

from __future__ import annotations

from goclaw.contracts.commands import CommandSpec

HOOKSPECS = "goclaw_memory.hookspecs"  # this plugin's own hooks, for other plugins to implement
SERVICES = ("memory", "sessions")
COMMANDS = (
    CommandSpec(
        "memory",
        "Index, search, read and watch memory files (MEMORY.md, memory/**/*.md).",
        "goclaw_memory.cli.memory:memory_group",
        startup=True,
    ),
    CommandSpec(
        "eval",
        "Measure memory retrieval on labelled questions (JSONL; see docs/eval.md).",
        "goclaw_memory.cli.quality:eval_command",
    ),
    CommandSpec(
        "session",
        "Record session messages, end runs, list episodic summaries.",
        "goclaw_memory.cli.session:session_group",
    ),
)
