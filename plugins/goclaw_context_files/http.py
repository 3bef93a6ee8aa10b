"""``/v1/files``: context files (``goclaw files``), for ``goclaw serve``. Imported only when the
server starts (hook ``goclaw_http_routes``)."""

# No `from __future__ import annotations`: FastAPI reads the endpoints' annotations.
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel


class FileBody(BaseModel):
    agent: str
    user: str | None = None
    content: str


def router(engine: Any, auth: Callable[..., Any]) -> APIRouter:
    Tok = Annotated[Any, Depends(auth)]
    r = APIRouter()

    @r.get("/files", tags=["files"])
    def files_list(tok: Tok, agent: str, user: str | None = None) -> list[dict[str, Any]]:
        tok.check(agent, user)
        return [f.as_dict() for f in engine.files.list(agent, user)]

    @r.get("/files/{name}", tags=["files"])
    def files_get(name: str, tok: Tok, agent: str, user: str | None = None) -> dict[str, Any]:
        tok.check(agent, user)
        return {"name": name, "content": engine.files.get(agent, name, user=user)}

    @r.put("/files/{name}", tags=["files"])
    def files_set(name: str, body: FileBody, tok: Tok) -> dict[str, Any]:
        tok.check(body.agent, body.user)
        return {"name": name, "action": engine.files.set(body.agent, name, body.content, user=body.user)}

    @r.delete("/files/{name}", tags=["files"])
    def files_delete(name: str, tok: Tok, agent: str, user: str | None = None) -> dict[str, Any]:
        tok.check(agent, user)
        return {"name": name, "deleted": bool(engine.files.delete(agent, name, user=user))}

    return r
