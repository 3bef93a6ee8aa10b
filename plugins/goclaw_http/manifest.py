"""What goclaw reads of plugin ``goclaw.http`` without importing it (its manifest: entry-point group
``goclaw.manifests``; the attributes are described in :mod:`goclaw.plugins`)."""

from __future__ import annotations

from goclaw.contracts.commands import CommandSpec

HOOKSPECS = "goclaw_http.hookspecs"  # the feature plugins contribute their endpoints through these
COMMANDS = (
    CommandSpec(
        "serve",
        "Serve the HTTP API (OpenAPI docs at /docs). Create a token first: goclaw serve token create.",
        "goclaw_http.cli:serve_group",
        startup=True,
    ),
)
