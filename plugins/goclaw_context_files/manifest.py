"""What goclaw reads of plugin ``goclaw.context_files`` without importing it (its manifest: entry-point group
``goclaw.manifests``; the attributes are described in :mod:`goclaw.plugins`)."""

from __future__ import annotations

from goclaw.contracts.commands import CommandSpec

# The prompt and every agent read context files: this plugin cannot be disabled.
ESSENTIAL = True
SERVICES = ("files",)
# The context-file cache is this plugin's; [plugins.bootstrap] cache_seconds still moves here,
# with a deprecation warning.
MOVED_SETTINGS = {"cache_seconds": "bootstrap"}
COMMANDS = (
    CommandSpec(
        "files",
        "Read and write context files (AGENTS.md, SOUL.md, ...).",
        "goclaw_context_files.cli:files_group",
    ),
)
