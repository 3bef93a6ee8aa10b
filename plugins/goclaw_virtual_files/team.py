"""Plugin ``goclaw.virtual.team``: TEAM.md, present when the agent is in a team:
team name, the agent's role, teammates with descriptions, and how the team works together."""

from __future__ import annotations

from goclaw import hookimpl
from goclaw.contracts.hooks import ContextFile
from goclaw.contracts.host import PromptContext
from goclaw_virtual_files.plugin import describe, roster

NAME = "TEAM.md"
WORKFLOW = (
    "Workflow: take the work that fits your role, hand the rest to the teammate whose role fits it, "
    "and report back to whoever asked. Do not do a teammate's job silently."
)


def render(ctx: PromptContext) -> str | None:
    teams = roster(ctx).teams
    if not teams:
        return None
    lines: list[str] = []
    for team in teams:
        if lines:
            lines.append("")
        lines.append(f"# Team: {team.name}")
        if team.description.strip():
            lines.append(" ".join(team.description.split()))
        lines.append(f"Your role: {team.role}.")
        if team.mates:
            lines.append("Teammates:")
            lines.extend(f"- {describe(m)} [role: {m.note}]" for m in team.mates)
        else:
            lines.append("You are the only member so far.")
    lines.append("")
    lines.append(WORKFLOW)
    return "\n".join(lines)


@hookimpl
def goclaw_virtual_context_files(ctx: PromptContext) -> list[ContextFile] | None:
    text = render(ctx)
    return None if text is None else [ContextFile(NAME, text, "virtual", virtual=True)]
