"""``/v1/kg``: the knowledge graph (``goclaw kg``), for ``goclaw serve``. Imported only when the
server starts (hook ``goclaw_http_routes``)."""

# No `from __future__ import annotations`: FastAPI reads the endpoints' annotations.
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict

from goclaw.contracts.records import row_json


# The answers, for the OpenAPI schema only: the endpoints return the stored rows as they are.
class EntityOut(BaseModel):
    """An entity row: its fields, datetimes in ISO 8601."""

    model_config = ConfigDict(extra="allow")
    id: str
    name: str


class RelationOut(BaseModel):
    """A relation row, with the names of its ``source`` and ``target`` entities."""

    model_config = ConfigDict(extra="allow")
    id: str
    source: str
    target: str


def router(engine: Any, auth: Callable[..., Any]) -> APIRouter:
    Tok = Annotated[Any, Depends(auth)]
    r = APIRouter()

    @r.get("/kg/entities", tags=["kg"], response_model=None, responses={200: {"model": list[EntityOut]}})
    def kg_entities(
        tok: Tok, agent: str, user: str | None = None, as_of: datetime | None = None
    ) -> list[Any]:
        tok.check(agent, user)
        return [row_json(e) for e in engine.kg.entities(agent, user, as_of=as_of)]

    @r.get("/kg/relations", tags=["kg"], response_model=None, responses={200: {"model": list[RelationOut]}})
    def kg_relations(
        tok: Tok, agent: str, user: str | None = None, as_of: datetime | None = None
    ) -> list[Any]:
        tok.check(agent, user)
        out = []
        for rel, names in engine.kg.relations(agent, user, as_of=as_of):
            row = row_json(rel)
            row["source"] = names.get(rel.source_entity_id, rel.source_entity_id)
            row["target"] = names.get(rel.target_entity_id, rel.target_entity_id)
            out.append(row)
        return out

    return r
