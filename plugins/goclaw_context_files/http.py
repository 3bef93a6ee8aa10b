"""``/v1/files``: context files (``goclaw files``), for ``goclaw serve``. Imported only when the
server starts (hook ``goclaw_http_routes``)."""

# No `from __future__ import annotations`: FastAPI reads the endpoints' annotations.
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field


class FileBody(BaseModel):
    agent: str
    user: str | None = None
    content: str


# The answers, for the OpenAPI schema only: the endpoints return the service's JSON as it is.
class FileInfo(BaseModel):
    name: str
    chars: int
    level: str = Field(description="agent or user")
    updated_at: str


class FileOut(BaseModel):
    name: str
    content: str


class FileSet(BaseModel):
    name: str
    action: str = Field(description="what the write did (created, updated, ...)")


class FileDeleted(BaseModel):
    name: str
    deleted: bool


def router(engine: Any, auth: Callable[..., Any]) -> APIRouter:
    Tok = Annotated[Any, Depends(auth)]
    r = APIRouter()

    @r.get("/files", tags=["files"], response_model=None, responses={200: {"model": list[FileInfo]}})
    def files_list(tok: Tok, agent: str, user: str | None = None) -> list[dict[str, Any]]:
        tok.check(agent, user)
        return [f.as_dict() for f in engine.files.list(agent, user)]

    @r.get("/files/{name}", tags=["files"], response_model=None, responses={200: {"model": FileOut}})
    def files_get(name: str, tok: Tok, agent: str, user: str | None = None) -> dict[str, Any]:
        tok.check(agent, user)
        return {"name": name, "content": engine.files.get(agent, name, user=user)}

    @r.put("/files/{name}", tags=["files"], response_model=None, responses={200: {"model": FileSet}})
    def files_set(name: str, body: FileBody, tok: Tok) -> dict[str, Any]:
        tok.check(body.agent, body.user)
        return {"name": name, "action": engine.files.set(body.agent, name, body.content, user=body.user)}

    @r.delete("/files/{name}", tags=["files"], response_model=None, responses={200: {"model": FileDeleted}})
    def files_delete(name: str, tok: Tok, agent: str, user: str | None = None) -> dict[str, Any]:
        tok.check(agent, user)
        return {"name": name, "deleted": bool(engine.files.delete(agent, name, user=user))}

    return r
