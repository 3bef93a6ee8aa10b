"""What goclaw reads of plugin ``goclaw.episodic`` without importing it (its manifest: entry-point group
``goclaw.manifests``; the attributes are described in :mod:`goclaw.plugins`)."""

from __future__ import annotations

SERVICES = ("episodic",)
REPLACES = ("goclaw.consolidation",)  # the deprecated name for episodic, kg and channel memory
