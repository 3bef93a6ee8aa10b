"""Section 9, Messaging (full mode): how replies reach the user."""

from __future__ import annotations

from goclaw import hookimpl
from goclaw.contracts.host import PromptContext, PromptSection
from goclaw_prompt.render import FULL, Section, one_line


def render(ctx: PromptContext) -> str:
    where = f" on {one_line(ctx.request.channel)}" if ctx.request.channel else ""
    return (
        "## Messaging\n"
        f"Your reply goes back to the user in this conversation{where}. Do not message other people or "
        "channels unless the user asks you to and a tool lets you. Format for the channel: plain text "
        "where Markdown does not render."
    )


SECTION = Section("messaging", 9, FULL, render)


@hookimpl
def goclaw_prompt_sections() -> list[PromptSection]:
    return [SECTION]
