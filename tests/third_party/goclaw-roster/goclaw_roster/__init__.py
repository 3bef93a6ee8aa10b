"""A from-scratch DELEGATION.md (replaces ``goclaw.virtual.delegation``; disable that first).

It reads the agent's links through the kernel's ``engine.agents`` and renders them as a table,
using nothing from the built-in virtual-files plugins.
"""

from __future__ import annotations

from goclaw import hookimpl
from goclaw.contracts.hooks import ContextFile
from goclaw.contracts.host import PromptContext


@hookimpl
def goclaw_virtual_context_files(ctx: PromptContext) -> list[ContextFile] | None:
    links = ctx.engine.agents.links(ctx.agent.name)
    if not links:
        return None
    rows = [f"| {agent.name} | {link.description or '-'} |" for agent, link in links]
    text = "\n".join(["# Who to ask", "", "| agent | when |", "|---|---|", *rows])
    return [ContextFile("DELEGATION.md", text, "virtual", virtual=True)]
