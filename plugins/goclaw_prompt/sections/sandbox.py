"""Section 6.5, Sandbox: only when the runtime runs tools in a sandbox."""

from __future__ import annotations

from goclaw import hookimpl
from goclaw.contracts.host import PromptContext, PromptSection
from goclaw_prompt.render import ALL_MODES, Section


def render(ctx: PromptContext) -> str | None:
    if not ctx.request.sandbox:
        return None
    return (
        "## Sandbox\n"
        "Your tools run inside an isolated sandbox. Files outside the workspace, the host system and "
        "parts of the network may be unavailable, and changes may not outlive the session. If something "
        "fails for lack of access, say so plainly instead of looking for a way around the sandbox."
    )


SECTION = Section("sandbox", 6.5, ALL_MODES, render)


@hookimpl
def goclaw_prompt_sections() -> list[PromptSection]:
    return [SECTION]
