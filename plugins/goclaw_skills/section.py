"""The Skills prompt section (section 4, full and task modes).

Re-evaluated on every build: inline mode (``<available_skills>`` XML, text escaped) when the
caller sees at most ``inline_max_skills`` skills **and** the tokens of their names and
descriptions (``engine.tokenizer``) are at most ``inline_max_tokens``; otherwise search mode, which
tells the agent to use ``skill_search`` then ``use_skill``. A slash activation
(``ctx.state["slash"].skill``) narrows the turn to that skill and injects its exact full
SKILL.md for this turn only. Sets ``ctx.state["skills_mode"]`` (``"inline"``, ``"search"`` or
None) and ``ctx.state["activated_skill"]`` (slug or None).
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from goclaw_text.wrappers import wrap

if TYPE_CHECKING:
    from collections.abc import Callable

    from goclaw.contracts.host import PromptContext
    from goclaw_skills.loader import ResolvedSkill, SkillView

INLINE_HEADER = """## Skills (mandatory)

Before replying, scan <available_skills>. If exactly one skill clearly applies to the request, \
load it with `use_skill` (pass its <slug>) or read the file at its <location> (copy the path \
verbatim), then follow it. If several apply, choose the most specific one. If none applies, \
load none. Never guess skill names or paths."""

SEARCH_TEXT = """## Skills (mandatory)

{count} skills are available but not listed here. Before replying to a request that a skill \
could cover, call `skill_search` with a few keywords (it returns the best matches as JSON), \
then call `use_skill` with the chosen slug and follow its instructions. Never guess skill \
names or paths."""


def estimate_tokens(skills: list[ResolvedSkill], count: Callable[[str], int] | None = None) -> float:
    """Tokens of name + description: ``count`` (the engine's tokenizer), else characters / 4."""
    if count is not None:
        return sum(count(f"{s.record.name} {s.record.description}") for s in skills)
    return sum(len(s.record.name) + len(s.record.description) for s in skills) / 4


def choose_mode(
    view: SkillView, max_skills: int, max_tokens: int, count: Callable[[str], int] | None = None
) -> str | None:
    if not len(view):
        return None
    if len(view) <= max_skills and estimate_tokens(view.skills, count) <= max_tokens:
        return "inline"
    return "search"


def available_skills_xml(skills: list[ResolvedSkill]) -> str:
    lines = ["<available_skills>"]
    for s in skills:
        r = s.record
        lines += [
            "  <skill>",
            f"    <name>{escape(r.name, quote=False)}</name>",
            f"    <slug>{escape(r.slug, quote=False)}</slug>",
            f"    <description>{escape(r.description, quote=False)}</description>",
            f"    <location>{escape(r.path, quote=False)}</location>",
            "  </skill>",
        ]
    lines.append("</available_skills>")
    return "\n".join(lines)


def activation_block(skill: ResolvedSkill) -> str:
    r = skill.record
    return (
        "## Explicit Skill Activation\n\n"
        f"The user activated the skill `{r.slug}` with a slash command for this turn. "
        "Follow its instructions below.\n\n"
        # The body cannot close its wrapper or open another block (goclaw_text.wrappers).
        + wrap("skill_instructions", r.instructions().rstrip(), name=r.name, slug=r.slug)
    )


class SkillsSection:
    """Section ``skills`` (order 4, full mode)."""

    name = "skills"
    order = 4.0
    modes = frozenset({"full", "task"})

    def render(self, ctx: PromptContext) -> str | None:
        ctx.state["skills_mode"] = None
        ctx.state["activated_skill"] = None
        engine = ctx.engine
        if not engine.has_service("skills"):
            return None
        svc = engine.skills
        svc.ensure_watching()
        cfg = svc.settings
        slash = ctx.state.get("slash")
        activated = getattr(slash, "skill", None) if slash is not None else None
        skill_filter = (activated,) if activated else ctx.request.skill_filter
        view = svc.view(ctx.agent, ctx.user or None, skill_filter)
        tok = engine.tokenizer  # "chars" keeps the exact (name + description characters) / 4
        count = None if tok.name == "chars" else tok.count
        mode = choose_mode(view, cfg.inline_max_skills, cfg.inline_max_tokens, count)
        ctx.state["skills_mode"] = mode
        if mode is None:
            return None
        parts = []
        if mode == "inline":
            parts.append(INLINE_HEADER + "\n\n" + available_skills_xml(view.skills))
        else:
            parts.append(SEARCH_TEXT.format(count=len(view)))
        hit = view.by_slug.get(activated) if activated else None
        if hit is not None:
            ctx.state["activated_skill"] = hit.slug
            parts.append(activation_block(hit))
        return "\n\n".join(parts)
