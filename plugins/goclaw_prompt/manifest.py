"""What goclaw reads of plugin ``goclaw.prompt`` without importing it (its manifest: entry-point group
``goclaw.manifests``; the attributes are described in :mod:`goclaw.plugins`)."""

from __future__ import annotations

from goclaw.contracts.commands import CommandSpec

# The system prompt is what goclaw serves: this plugin cannot be disabled.
ESSENTIAL = True
HOOKSPECS = "goclaw_prompt.hookspecs"  # this plugin's own hooks, for other plugins to implement
SERVICES = ("prompt",)
COMMANDS = (
    CommandSpec(
        "prompt",
        "Print the system prompt for an agent (and user).",
        "goclaw_prompt.cli:prompt_cmd",
        startup=True,
    ),
)
