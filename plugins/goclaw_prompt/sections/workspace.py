"""Section 6, Workspace: where the agent's own files live."""

from __future__ import annotations

from goclaw import hookimpl
from goclaw.contracts.host import PromptContext, PromptSection
from goclaw_prompt.render import ALL_MODES, Section
from goclaw_text.wrappers import single_line


def render(ctx: PromptContext) -> str:
    folder = ctx.engine.agent_dir(ctx.agent)
    # Paths carry the agent folder and the user id: one line each, whatever they contain.
    lines = ["## Workspace", f"Your working folder is {single_line(folder)}."]
    if ctx.user:
        lines.append(
            f"Memory for this user lives in {single_line(folder / 'users' / ctx.user)}: "
            "MEMORY.md for lasting facts, "
            "memory/YYYY-MM-DD.md for daily notes."
        )
    else:
        lines.append(
            "Agent memory lives there: MEMORY.md for lasting facts, memory/YYYY-MM-DD.md for daily notes."
        )
    lines.append(
        "Context files (AGENTS.md, SOUL.md, ...) are stored by the system; use the context-file tool."
    )
    return "\n".join(lines)


SECTION = Section("workspace", 6, ALL_MODES, render)


@hookimpl
def goclaw_prompt_sections() -> list[PromptSection]:
    return [SECTION]
