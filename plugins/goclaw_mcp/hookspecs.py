"""The hook of the MCP plugin: other plugins offer prompts and resources to ``goclaw mcp`` through it.

``goclaw.mcp`` declares it in its manifest (``HOOKSPECS``), so it exists whenever goclaw is
installed, even with the plugin disabled or its extra missing, and a plugin implements it like any
goclaw hook, with the ``goclaw.hookimpl`` marker. The value it returns,
:class:`~goclaw.contracts.hooks.McpPrompt`, is in :mod:`goclaw.contracts.hooks`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from goclaw.contracts.hooks import McpPrompt
    from goclaw.contracts.host import Host

hookspec = pluggy.HookspecMarker("goclaw")  # goclaw's project name: these are goclaw hooks

HOOK_NAMES = ("goclaw_mcp_prompts",)


@hookspec
def goclaw_mcp_prompts(engine: Host) -> list[McpPrompt] | None:
    """Contribute prompts (and resources) to ``goclaw mcp``: :class:`goclaw.contracts.hooks.McpPrompt`.

    Semantics: all collected when a client lists or asks for one, sorted by name; a duplicate
    name is an error. A prompt with a ``uri`` is a Markdown resource too (read without
    arguments). Default plugin: ``goclaw.prompt`` (``system_prompt``, resource
    ``goclaw://prompt/system``: the assembled system prompt of the server's scope).
    """


def prompts(host: Host) -> list[McpPrompt]:
    """Every plugin's MCP prompts, sorted by name."""
    return host.hooks.items("goclaw_mcp_prompts", "MCP prompt", engine=host)
