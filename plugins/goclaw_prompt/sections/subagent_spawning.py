"""Section 14, Sub-Agent Spawning: only when the runtime offers a spawn tool
(``[plugins.prompt] spawn_tools``)."""

from __future__ import annotations

from goclaw import hookimpl
from goclaw.contracts.host import PromptContext, PromptSection
from goclaw_prompt.render import ALL_MODES, Section


def render(ctx: PromptContext) -> str | None:
    try:
        names = set(ctx.engine.plugin_settings("prompt").spawn_tools)
    except Exception:
        names = {"spawn", "spawn_subagent", "sessions_spawn", "subagent"}
    tool = next((t.name for t in sorted(ctx.request.tools, key=lambda t: t.name) if t.name in names), None)
    if tool is None:
        return None
    return (
        "## Sub-Agent Spawning\n"
        f"For long or parallel work you can start a sub-agent with `{tool}`. It does not see this "
        "conversation: give it a complete, self-contained task with every detail it needs and the form "
        "of the answer you want back. Its result comes back to you; check it before passing it on. "
        "Do not spawn for quick tasks you can do directly."
    )


SECTION = Section("subagent_spawning", 14, ALL_MODES, render)


@hookimpl
def goclaw_prompt_sections() -> list[PromptSection]:
    return [SECTION]
