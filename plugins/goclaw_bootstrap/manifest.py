"""What goclaw reads of plugin ``goclaw.bootstrap`` without importing it (its manifest: entry-point group
``goclaw.manifests``; the attributes are described in :mod:`goclaw.plugins`)."""

from __future__ import annotations

from goclaw.contracts.commands import CommandSpec

SERVICES = ("seeder", "summoner")
COMMANDS = (
    CommandSpec(
        "agent summon",
        "Generate SOUL, IDENTITY, AGENTS and TOOLS from a description with one LLM call.",
        "goclaw_bootstrap.cli:summon_cmd",
    ),
)
