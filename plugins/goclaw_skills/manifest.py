"""What goclaw reads of plugin ``goclaw.skills`` without importing it (its manifest: entry-point group
``goclaw.manifests``; the attributes are described in :mod:`goclaw.plugins`)."""

from __future__ import annotations

from goclaw.contracts.commands import CommandSpec

HOOKSPECS = "goclaw_skills.hookspecs"  # this plugin's own hooks, for other plugins to implement
SERVICES = ("skills",)
COMMANDS = (
    CommandSpec(
        "skills",
        "List, search, lint, add and grant skills.",
        "goclaw_skills.cli:skills_group",
        startup=True,
    ),
)
