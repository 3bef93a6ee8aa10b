"""Section 10, Extra Context / Subagent Context: the runtime's extra prompt, isolated
in ``<extra_context>`` (its own wrapper tags inside are neutralised)."""

from __future__ import annotations

from goclaw import hookimpl
from goclaw.contracts.host import PromptContext, PromptSection
from goclaw_prompt.render import ALL_MODES, Section, escape_wrapped


def render(ctx: PromptContext) -> str | None:
    extra = ctx.request.extra_prompt
    if not extra or not extra.strip():
        return None
    heading = "## Subagent Context" if ctx.mode == "minimal" else "## Additional Context"
    return f"{heading}\n<extra_context>\n{escape_wrapped(extra.strip())}\n</extra_context>"


SECTION = Section("extra_context", 10, ALL_MODES, render)


@hookimpl
def goclaw_prompt_sections() -> list[PromptSection]:
    return [SECTION]
