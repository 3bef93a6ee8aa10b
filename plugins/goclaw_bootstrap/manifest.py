"""What goclaw reads of plugin ``goclaw.bootstrap`` without importing it (its manifest: entry-point group
``goclaw.manifests``; the attributes are described in :mod:`goclaw.plugins`)."""

from __future__ import annotations

SERVICES = ("seeder", "summoner")
