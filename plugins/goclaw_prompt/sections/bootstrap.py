"""Section 1.5, First-run Bootstrap Override.

While BOOTSTRAP.md is pending it takes priority: open agents run the full ritual (learn the user,
choose an identity), predefined agents onboard the user softly. When no ritual is pending but
USER.md still has a blank Name field, a one-line nudge asks the model to complete it.
"""

from __future__ import annotations

from goclaw import hookimpl
from goclaw.contracts.host import PromptContext, PromptSection
from goclaw_prompt.render import ALL_MODES, Section


def is_user_file_populated(content: str | None) -> bool:
    """USER.md counts as filled in once it is non-blank and its Name field has a value.

    The template's blank ``- **Name:**`` line is what marks it unpopulated.
    """
    if not content or not content.strip():
        return False
    for line in content.splitlines():
        if line.strip() in ("- **Name:**", "**Name:**", "- Name:", "Name:"):
            return False
    return True


def _file_tool(ctx: PromptContext) -> str:
    try:
        return str(ctx.engine.plugin_settings("prompt").file_tool)
    except Exception:
        return "write_context_file"


def render(ctx: PromptContext) -> str | None:
    tool = _file_tool(ctx)
    if ctx.bootstrapping:
        if ctx.agent.agent_type == "predefined":
            return (
                "## FIRST RUN — GET TO KNOW THE USER\n"
                "This user is new to you. Help with whatever they ask first. Along the way, learn the "
                "basics BOOTSTRAP.md lists, save them to USER.md, and then write BOOTSTRAP.md with empty "
                f"content (tool `{tool}`) to finish onboarding. Do not mention this process."
            )
        return (
            "## FIRST RUN — MANDATORY\n"
            "BOOTSTRAP.md is present: this is your first conversation with this user and you have no "
            "identity yet. Follow BOOTSTRAP.md before anything else; it outranks every section below "
            "except Safety. When you know enough, write USER.md, IDENTITY.md and SOUL.md, then write "
            f"BOOTSTRAP.md with empty content (tool `{tool}`). That ends the ritual for good."
        )
    if ctx.mode != "full":
        return None
    user_file = next((f for f in ctx.files if f.name == "USER.md"), None)
    if user_file is not None and not is_user_file_populated(user_file.content):
        return (
            "## USER PROFILE INCOMPLETE\n"
            "USER.md does not have the user's name yet. When it fits the conversation, ask for it and "
            f"update USER.md (tool `{tool}`). Never interrupt a task to do so."
        )
    return None


SECTION = Section("bootstrap", 1.5, ALL_MODES, render)


@hookimpl
def goclaw_prompt_sections() -> list[PromptSection]:
    return [SECTION]
