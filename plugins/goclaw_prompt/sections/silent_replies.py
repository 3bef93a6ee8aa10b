"""Section 12, Silent Replies (full mode): the NO_REPLY convention."""

from __future__ import annotations

from goclaw import hookimpl
from goclaw.contracts.host import PromptContext, PromptSection
from goclaw_prompt.render import FULL, Section


def render(ctx: PromptContext) -> str:
    return (
        "## Silent Replies\n"
        "When you have nothing useful to add (for example a group message not meant for you), reply with "
        "exactly NO_REPLY and nothing else. Never append NO_REPLY to a real answer."
    )


SECTION = Section("silent_replies", 12, FULL, render)


@hookimpl
def goclaw_prompt_sections() -> list[PromptSection]:
    return [SECTION]
