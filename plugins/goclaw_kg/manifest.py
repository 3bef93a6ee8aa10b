"""What goclaw reads of plugin ``goclaw.kg`` without importing it (its manifest: entry-point group
``goclaw.manifests``; the attributes are described in :mod:`goclaw.plugins`)."""

from __future__ import annotations

from goclaw.contracts.commands import CommandSpec

SERVICES = ("kg",)
REPLACES = ("goclaw.consolidation",)  # the deprecated name for episodic, kg and channel memory
COMMANDS = (
    CommandSpec(
        "kg",
        "The temporal knowledge graph: entities, relations, dedup review.",
        "goclaw_kg.cli:kg_group",
    ),
)
