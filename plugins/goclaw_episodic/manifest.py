"""What goclaw reads of plugin ``goclaw.episodic`` without importing it (its manifest: entry-point group
``goclaw.manifests``; the attributes are described in :mod:`goclaw.plugins`)."""

from __future__ import annotations

from goclaw.contracts.commands import CommandSpec

SERVICES = ("episodic",)
COMMANDS = (
    CommandSpec(
        "workers prune",
        "Delete expired episodic summaries now (retention; also runs every 6 h in workers run).",
        "goclaw_episodic.cli:prune_cmd",
    ),
)
REPLACES = ("goclaw.consolidation",)  # the deprecated name for episodic, kg and channel memory
