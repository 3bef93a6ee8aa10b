"""What goclaw reads of plugin ``goclaw.mcp`` without importing it (its manifest: entry-point group
``goclaw.manifests``; the attributes are described in :mod:`goclaw.plugins`)."""

from __future__ import annotations

from goclaw.contracts.commands import CommandSpec

HOOKSPECS = "goclaw_mcp.hookspecs"  # other plugins contribute MCP prompts through these
COMMANDS = (
    CommandSpec(
        "mcp",
        "Run an MCP server scoped to one agent (and user).",
        "goclaw_mcp.cli:mcp_cmd",
        startup=True,
    ),
)
