"""Section 8, Current Time. The date only, in UTC, so the prompt stays cacheable all day."""

from __future__ import annotations

from datetime import UTC, datetime

from goclaw import hookimpl
from goclaw.contracts.host import PromptContext, PromptSection
from goclaw_prompt.render import ALL_MODES, Section


def render(ctx: PromptContext) -> str:
    now = ctx.request.now or datetime.now(UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    now = now.astimezone(UTC)
    return f"## Current Time\nCurrent date: {now:%Y-%m-%d} ({now:%A}), time zone UTC."


SECTION = Section("current_time", 8, ALL_MODES, render)


@hookimpl
def goclaw_prompt_sections() -> list[PromptSection]:
    return [SECTION]
