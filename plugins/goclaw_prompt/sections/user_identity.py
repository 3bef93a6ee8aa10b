"""Section 7, User Identity (full mode): who is on the other side."""

from __future__ import annotations

from goclaw import hookimpl
from goclaw.contracts.host import PromptContext, PromptSection
from goclaw_prompt.render import FULL, Section, one_line


def render(ctx: PromptContext) -> str | None:
    if not ctx.user:
        return None
    return (
        "## User Identity\n"
        f"You are talking with user id `{one_line(ctx.user)}`. USER.md below is their profile. "
        "Never reveal one user's details or memory to another user."
    )


SECTION = Section("user_identity", 7, FULL, render)


@hookimpl
def goclaw_prompt_sections() -> list[PromptSection]:
    return [SECTION]
