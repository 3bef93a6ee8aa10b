"""What goclaw reads of plugin ``goclaw.channel_memory`` without importing it (its manifest: entry-point group
``goclaw.manifests``; the attributes are described in :mod:`goclaw.plugins`)."""

from __future__ import annotations

from goclaw.contracts.commands import CommandSpec

SERVICES = ("channel_memory",)
REPLACES = ("goclaw.consolidation",)  # the deprecated name for episodic, kg and channel memory
COMMANDS = (
    CommandSpec(
        "channel-memory",
        "Passive channel memory: opt-in per channel, redacted, reviewed before it is remembered.",
        "goclaw_channel_memory.cli:channel_group",
    ),
)
