"""Plugin ``goclaw.skills``: the ``skills`` service, the Skills prompt section, the
``skill_search`` / ``use_skill`` tools and the start-up embedding backfill.

Owns the ``skills`` tables (``goclaw_schema``, :mod:`goclaw_skills.tables`). The tiers are
separate plugins (``goclaw.skills.tier.*``) and so are the slash commands
(``goclaw.slash_commands``), so each can be disabled or replaced on its own.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from goclaw import hookimpl
from goclaw.contracts.hooks import Tool

if TYPE_CHECKING:
    from pydantic import BaseModel

    from goclaw.contracts.host import Host


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    from goclaw_skills.settings import SkillsSettings

    return SkillsSettings


@hookimpl
def goclaw_schema() -> list[Any]:
    from goclaw.contracts.schema import SchemaComponent
    from goclaw_skills.tables import MIGRATIONS, Skill, SkillAgentGrant, SkillUserGrant, SkillVersion

    tables = (Skill, SkillVersion, SkillAgentGrant, SkillUserGrant)
    return [SchemaComponent("skills", tables, MIGRATIONS, "managed skill store and grants")]


@hookimpl
def goclaw_forget_rows(engine: Host, scope: Any, connection: Any) -> list[Any]:
    """A forgotten user's grants (when forgotten across every agent); a forgotten agent's."""
    from goclaw.contracts.schema import ForgetStep
    from goclaw_skills.tables import SkillAgentGrant, SkillUserGrant

    if scope.whole_agent:
        t = SkillAgentGrant.__table__
        return [ForgetStep(t, t.c.agent_id.in_(scope.agent_ids))]
    if scope.all_agents:
        u = SkillUserGrant.__table__
        return [ForgetStep(u, u.c.user_id == scope.user)]
    return []


@hookimpl
def goclaw_services(engine: Host) -> dict[str, Any]:
    from goclaw_skills.service import SkillsService

    return {"skills": SkillsService(engine)}


@hookimpl
def goclaw_startup(engine: Host) -> None:
    """Embed skills lacking vectors (nothing to do without an embedder)."""
    if engine.has_service("skills") and engine.plugin_settings("skills").backfill_embeddings:
        engine.skills.backfill_embeddings()


@hookimpl
def goclaw_prompt_sections() -> list[Any]:
    from goclaw_skills.section import SkillsSection

    return [SkillsSection()]


@hookimpl
def goclaw_tools(engine: Host) -> list[Tool]:
    """``skill_search`` returns JSON hits; ``use_skill`` returns the skill's instructions.

    The runtime passes the caller as keywords (``agent=``, ``user=``, ``skill_filter=``);
    both tools honour grants and the allow list.
    """
    if not engine.has_service("skills"):
        return []
    svc = engine.skills

    def skill_search(query: str, agent: Any = None, user: str | None = None, skill_filter: Any = None) -> str:
        hits = svc.search(query, agent, user, skill_filter)
        return json.dumps([h.as_dict() for h in hits], ensure_ascii=False)

    def use_skill(slug: str, agent: Any = None, user: str | None = None, skill_filter: Any = None) -> str:
        return str(svc.use(slug, agent, user, skill_filter))

    return [
        Tool(
            "skill_search",
            "Search the available skills by keywords; returns up to 5 matches as JSON "
            '([{"slug", "name", "score", "source"}]). Then call use_skill with a slug.',
            {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
            skill_search,
        ),
        Tool(
            "use_skill",
            "Load a skill's full instructions (SKILL.md) by slug and follow them.",
            {"type": "object", "properties": {"slug": {"type": "string"}}, "required": ["slug"]},
            use_skill,
        ),
    ]


@hookimpl
def goclaw_http_routes(engine: Any, auth: Any) -> Any:
    from goclaw_skills.http import router

    return router(engine, auth)
