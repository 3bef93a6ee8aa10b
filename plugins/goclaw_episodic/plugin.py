"""Plugin ``goclaw.episodic``: episodic memory.

Provides the ``episodic`` service (``engine.episodic``), the auto-injected "Memory Context"
prompt section, episodic hits for ``memory_search`` and the ``memory_expand`` tool; owns the
``episodic_summaries`` table (component ``episodic``, :mod:`goclaw_episodic.tables`). Its workers
are separate default plugins in this package (``goclaw.workers.episodic``,
``goclaw.workers.dreaming``, ``goclaw.workers.retention``) so each can be disabled or replaced.

Auto-injection lives here because what it injects is episodic memory: it searches this plugin's
summaries, reads its settings (``auto_inject_*``) and only adds memory-file hits through the
``memory`` service when that plugin is on (docs/consolidation.md).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from goclaw import hookimpl
from goclaw.contracts.agents import find_agent
from goclaw.contracts.hooks import SearchHit, Tool
from goclaw.contracts.records import entity_dict, episode_dict, relation_dict
from goclaw_episodic.autoinject import MemoryContextSection
from goclaw_episodic.settings import EpisodicSettings
from goclaw_episodic.store import EpisodicStore
from goclaw_text.wrappers import neutralise_data


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    return EpisodicSettings


@hookimpl
def goclaw_schema() -> list[Any]:
    from goclaw.contracts.schema import SchemaComponent
    from goclaw_episodic.tables import MIGRATIONS, EpisodicSummary, EpisodicVersion

    return [SchemaComponent("episodic", (EpisodicSummary, EpisodicVersion), MIGRATIONS, "episodic summaries")]


@hookimpl
def goclaw_forget_rows(engine: Any, scope: Any, connection: Any) -> list[Any]:
    """The scope's episodic summaries; a whole agent's change counter after them (deleting its
    summaries moves it)."""
    from sqlmodel import col

    from goclaw.contracts.schema import ForgetStep
    from goclaw_episodic.tables import EpisodicSummary, EpisodicVersion

    steps = [ForgetStep(EpisodicSummary, scope.clause(EpisodicSummary))]
    if scope.whole_agent:
        steps.append(ForgetStep(EpisodicVersion, col(EpisodicVersion.agent_id).in_(scope.agent_ids)))
    return steps


@hookimpl
def goclaw_services(engine: Any) -> dict[str, Any]:
    return {"episodic": EpisodicStore(engine)}


@hookimpl
def goclaw_prompt_sections() -> list[Any]:
    return [MemoryContextSection()]


@hookimpl
def goclaw_memory_search_extra(
    engine: Any,
    query: str,
    agent: Any,
    user: str | None,
    limit: int,
    query_vector: Any,
    since: str | None = None,
    until: str | None = None,
) -> list[SearchHit]:
    """Episodic summaries as ``memory_search`` hits (``tier="episodic"``); the
    memory search's query vector, when it made one, spares embedding the query again. A date
    range keeps the summaries created within it before the best ``limit`` are cut."""
    if not query or not query.strip():
        return []
    days = (since, until) if since or until else None
    return EpisodicStore(engine).hits_for(agent.id, user, query, limit, 0.0, query_vector, days)


def memory_expand(engine: Any, id: str, agent: str, user: str | None = None) -> dict[str, Any]:
    """Full episodic summary plus its linked KG facts (the ``memory_expand`` tool); the facts
    come from the ``kg`` service and are empty when ``goclaw.kg`` is disabled.

    Scoped: the summary must belong to ``agent`` and be agent-level or ``user``'s own.
    """
    from goclaw.errors import NotFoundError

    a = find_agent(engine, agent)
    if a is not None and a.tenant_id != engine.settings.tenant_id:  # another tenant's: unknown here
        a = None
    row = EpisodicStore(engine).get(id)
    if a is None or row is None or row.agent_id != a.id or row.user_id not in ("", user or ""):
        raise NotFoundError(f"no episodic memory {id!r} for this agent/user")
    ents: list[Any] = []
    rels: list[Any] = []
    names: dict[str, str] = {}
    if engine.has_service("kg"):
        ents, rels = engine.kg.facts_for_episode(row.id)
        names = {e.id: e.name for e in ents}
        ends = {r.source_entity_id for r in rels} | {r.target_entity_id for r in rels}
        names.update(engine.kg.entity_names(ends - set(names)))
    return {
        "episode": episode_dict(row),
        "entities": [entity_dict(e) for e in ents],
        "relations": [relation_dict(r, names) for r in rels],
    }


@hookimpl
def goclaw_tools(engine: Any) -> list[Tool]:
    def _expand(id: str, agent: str, user: str | None = None) -> dict[str, Any]:
        # Stored text reaches the model: wrapper tags in it are neutralised, as in the prompt.
        return neutralise_data(memory_expand(engine, id, agent, user))  # type: ignore[no-any-return]

    return [
        Tool(
            name="memory_expand",
            description=(
                "Deep retrieval from episodic memory: the full summary of a past session (by the id "
                "from memory_search or the Memory Context) with the knowledge-graph facts linked to it."
            ),
            parameters={
                "type": "object",
                "properties": {"id": {"type": "string", "description": "episodic memory id"}},
                "required": ["id"],
            },
            func=_expand,
        )
    ]
