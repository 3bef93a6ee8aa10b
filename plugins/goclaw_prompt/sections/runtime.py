"""Section 15, Runtime: one line of facts about this run."""

from __future__ import annotations

from goclaw import hookimpl
from goclaw.contracts.host import PromptContext, PromptSection
from goclaw_prompt.render import ALL_MODES, Section, one_line


def render(ctx: PromptContext) -> str:
    agent = ctx.agent
    fields = [
        ("agent", agent.name + (f" ({agent.display_name})" if agent.display_name else "")),
        ("type", agent.agent_type),
        ("user", ctx.user),
        ("mode", ctx.mode),
        ("channel", ctx.request.channel or ""),
        ("session", ctx.request.session_key or ""),
    ]
    line = " | ".join(f"{k}={one_line(v)}" for k, v in fields if v)
    return f"## Runtime\nRuntime: {line}"


SECTION = Section("runtime", 15, ALL_MODES, render)


@hookimpl
def goclaw_prompt_sections() -> list[PromptSection]:
    return [SECTION]
