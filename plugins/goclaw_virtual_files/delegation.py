"""Plugin ``goclaw.virtual.delegation``: DELEGATION.md.

Present when the agent has manual links. Up to ``delegation_inline_max`` (15) targets are listed
inline with their descriptions; beyond that only a description of how to delegate is given, so
a large roster does not flood the prompt.
"""

from __future__ import annotations

from goclaw import hookimpl
from goclaw.contracts.hooks import ContextFile
from goclaw.contracts.host import PromptContext
from goclaw_virtual_files.plugin import describe, roster, settings

NAME = "DELEGATION.md"


def render(ctx: PromptContext) -> str | None:
    links = roster(ctx).links
    if not links:
        return None
    limit = settings(ctx).delegation_inline_max
    lines = ["# Delegation Targets"]
    if len(links) <= limit:
        lines.append(
            "You can hand a task to the agents below when it fits them better than you. Give them a "
            "complete, self-contained brief; you stay responsible for the answer."
        )
        lines.append("")
        for peer in links:
            when = " ".join(peer.note.split())
            lines.append(f"- {describe(peer)}" + (f" (delegate when: {when})" if when else ""))
    else:
        lines.append(
            f"You can hand tasks to {len(links)} specialist agents. They are not listed here: when a task "
            "is better done by a specialist, delegate it by describing the task and the expertise it "
            "needs, and the runtime routes it to the matching agent. Give a complete, self-contained "
            "brief; you stay responsible for the answer."
        )
    return "\n".join(lines)


@hookimpl
def goclaw_virtual_context_files(ctx: PromptContext) -> list[ContextFile] | None:
    text = render(ctx)
    return None if text is None else [ContextFile(NAME, text, "virtual", virtual=True)]
