"""``/v1/skills``: list, search, show (``goclaw skills``), for ``goclaw serve``. Imported only
when the server starts (hook ``goclaw_http_routes``)."""

# No `from __future__ import annotations`: FastAPI reads the endpoints' annotations.
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel


# The answers, for the OpenAPI schema only: the endpoints return the service's JSON as it is.
class SkillOut(BaseModel):
    slug: str
    name: str
    description: str
    source: str
    path: str
    shadows: list[dict[str, str]]


class SkillHitOut(BaseModel):
    slug: str
    name: str
    score: float
    source: str


class SkillShown(SkillOut):
    content: str


def router(engine: Any, auth: Callable[..., Any]) -> APIRouter:
    """``/skills/search`` comes before the ``/skills/{slug}`` it would otherwise match."""
    Tok = Annotated[Any, Depends(auth)]
    r = APIRouter()

    @r.get("/skills", tags=["skills"], response_model=None, responses={200: {"model": list[SkillOut]}})
    def skills_list(tok: Tok, agent: str, user: str | None = None) -> list[dict[str, Any]]:
        tok.check(agent, user)
        return [s.as_dict() for s in engine.skills.list(agent, user)]

    @r.get(
        "/skills/search", tags=["skills"], response_model=None, responses={200: {"model": list[SkillHitOut]}}
    )
    def skills_search(tok: Tok, q: str, agent: str, user: str | None = None) -> list[dict[str, Any]]:
        tok.check(agent, user)
        return [h.as_dict() for h in engine.skills.search(q, agent, user)]

    @r.get("/skills/{slug}", tags=["skills"], response_model=None, responses={200: {"model": SkillShown}})
    def skills_show(slug: str, tok: Tok, agent: str, user: str | None = None) -> dict[str, Any]:
        tok.check(agent, user)
        hit = engine.skills.show(slug, agent, user)
        data: dict[str, Any] = hit.as_dict()
        data["content"] = hit.record.instructions()
        return data

    return r
