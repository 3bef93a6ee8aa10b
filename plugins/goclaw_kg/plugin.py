"""Plugin ``goclaw.kg``: the temporal knowledge graph.

Provides the ``kg`` service (``engine.kg``), its facts as a ``memory_search`` tier
(:mod:`goclaw_kg.memory_tier`) and owns the KG tables (component ``kg``,
:mod:`goclaw_kg.tables`). Its workers are separate default plugins in this package
(``goclaw.workers.semantic`` extracts facts from each new episodic summary,
``goclaw.workers.dedup`` merges duplicate entities) so each can be disabled or replaced.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from goclaw import hookimpl
from goclaw_kg.graph import KnowledgeGraph
from goclaw_kg.settings import KGSettings


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    return KGSettings


@hookimpl
def goclaw_schema() -> list[Any]:
    from goclaw.contracts.schema import SchemaComponent
    from goclaw_kg.tables import MIGRATIONS, KGDedupCandidate, KGEntity, KGRelation, KGVersion

    tables = (KGEntity, KGRelation, KGDedupCandidate, KGVersion)
    return [SchemaComponent("kg", tables, MIGRATIONS, "temporal knowledge graph")]


@hookimpl
def goclaw_forget_rows(engine: Any, scope: Any, connection: Any) -> list[Any]:
    """The scope's dedup candidates, relations and entities (children first); a whole agent's
    change counter after them (deleting its facts moves it)."""
    from sqlmodel import col

    from goclaw.contracts.schema import ForgetStep
    from goclaw_kg.tables import KGDedupCandidate, KGEntity, KGRelation, KGVersion

    steps = [ForgetStep(t, scope.clause(t)) for t in (KGDedupCandidate, KGRelation, KGEntity)]
    if scope.whole_agent:
        steps.append(ForgetStep(KGVersion, col(KGVersion.agent_id).in_(scope.agent_ids)))
    return steps


@hookimpl
def goclaw_services(engine: Any) -> dict[str, Any]:
    return {"kg": KnowledgeGraph(engine)}


@hookimpl
def goclaw_http_routes(engine: Any, auth: Any) -> Any:
    from goclaw_kg.http import router

    return router(engine, auth)


@hookimpl
def goclaw_memory_search_extra(
    engine: Any,
    query: str,
    agent: Any,
    user: str | None,
    limit: int,
    for_prompt: bool,
    since: str | None = None,
    until: str | None = None,
) -> list[Any]:
    """Knowledge-graph facts as ``memory_search`` hits (``tier="kg"``, :mod:`goclaw_kg.memory_tier`);
    none for the automatic Memory Context (facts are searched on request, not injected). A date
    range keeps the facts valid from a day within it."""
    if for_prompt:
        return []
    from goclaw_kg.memory_tier import fact_hits

    return fact_hits(engine, query, agent, user, limit, since, until)


@hookimpl
def goclaw_memory_expand(engine: Any, id: str, agent: Any, user: str | None) -> dict[str, Any] | None:
    """``memory_get`` of a ``kg:`` hit id: the entity with its relations, or the relation."""
    from goclaw_kg.memory_tier import expand

    return expand(engine, id, agent, user)
