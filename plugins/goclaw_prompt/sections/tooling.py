"""Section 2, Tooling: the tools the runtime offers this turn, sorted by name."""

from __future__ import annotations

from goclaw import hookimpl
from goclaw.contracts.host import PromptContext, PromptSection
from goclaw_prompt.render import ALL_MODES, Section


def render(ctx: PromptContext) -> str:
    tools = sorted(ctx.request.tools, key=lambda t: t.name)
    if not tools:
        return "## Tooling\nNo tools are available this turn. Do not pretend to call any; answer directly."
    lines = ["## Tooling", "Tools available this turn (call them by their exact name):"]
    for tool in tools:
        desc = " ".join(tool.description.split())
        lines.append(f"- {tool.name}: {desc}" if desc else f"- {tool.name}")
    lines.append("Use a tool when it can answer better than you can from memory; say so when one fails.")
    return "\n".join(lines)


SECTION = Section("tooling", 2, ALL_MODES, render)


@hookimpl
def goclaw_prompt_sections() -> list[PromptSection]:
    return [SECTION]
