"""Section 1, Identity: who the model is and where it runs."""

from __future__ import annotations

from goclaw import hookimpl
from goclaw.contracts.host import PromptContext, PromptSection
from goclaw_prompt.render import ALL_MODES, Section, one_line


def render(ctx: PromptContext) -> str:
    product = one_line(ctx.engine.settings.product_name)
    text = f"You are a personal assistant running inside {product}."
    if ctx.request.channel:
        text += f" You are talking with the user through {one_line(ctx.request.channel)}."
    return text


SECTION = Section("identity", 1, ALL_MODES, render)


@hookimpl
def goclaw_prompt_sections() -> list[PromptSection]:
    return [SECTION]
