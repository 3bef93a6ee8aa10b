"""Plugin ``goclaw.virtual.availability``: AVAILABILITY.md.

Present whenever the agent is not in a team (TEAM.md takes its place otherwise). It states, in
the negative, what the agent does not have, so the model does not try team or delegation work
that cannot happen.
"""

from __future__ import annotations

from goclaw import hookimpl
from goclaw.contracts.hooks import ContextFile
from goclaw.contracts.host import PromptContext
from goclaw_virtual_files.plugin import roster, settings

NAME = "AVAILABILITY.md"


def render(ctx: PromptContext) -> str | None:
    r = roster(ctx)
    if r.teams:
        return None
    lines = [
        "# Availability",
        "You are NOT part of any team: there are no teammates, shared team tasks or team workspace. "
        "Do not use team tools or claim to coordinate with a team.",
    ]
    if r.links and len(r.links) <= settings(ctx).delegation_inline_max:
        lines.append("You may delegate only to the agents in DELEGATION.md; nobody else is available.")
    elif r.links:
        # DELEGATION.md lists nobody above the inline limit: name the route, not a list.
        lines.append(
            f"You may delegate only to your {len(r.links)} linked specialist agents, in the way "
            "DELEGATION.md describes; nobody else is available."
        )
    else:
        lines.append(
            "You have NO delegation targets either. Do the work yourself with the tools listed above, "
            "or tell the user plainly what you cannot do."
        )
    return "\n".join(lines)


@hookimpl
def goclaw_virtual_context_files(ctx: PromptContext) -> list[ContextFile] | None:
    text = render(ctx)
    return None if text is None else [ContextFile(NAME, text, "virtual", virtual=True)]
