"""``/v1/memory`` and ``/v1/sessions``: memory search, read, index and write, and sessions
(``goclaw memory``, ``goclaw session``), for ``goclaw serve``. Imported only when the server
starts (hook ``goclaw_http_routes``)."""

# No `from __future__ import annotations`: FastAPI reads the endpoints' annotations.
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from goclaw.contracts.records import row_json
from goclaw.contracts.tools import ToolContext
from goclaw.errors import NotFoundError, ValidationError
from goclaw_memory.hit_ids import memory_hit_id
from goclaw_memory.tools import search_hits
from goclaw_text.wrappers import neutralise_data


class SearchBody(BaseModel):
    agent: str
    user: str | None = None
    query: str
    limit: int | None = Field(default=None, ge=1, le=1000, description="hits (default: max_results)")
    channel: str = "hybrid"
    # tags, since, until, path, scope (goclaw_memory.filters); limit counts the hits that pass
    filters: dict[str, Any] | None = None


class IndexBody(BaseModel):
    agent: str | None = None
    user: str | None = None


class AddBody(BaseModel):
    agent: str
    user: str | None = None
    text: str
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    date: str | None = None


class CorrectBody(BaseModel):
    agent: str
    user: str | None = None
    text: str
    id: str | None = None
    path: str | None = None
    from_line: int | None = Field(default=None, ge=1)
    to_line: int | None = Field(default=None, ge=1)


class MessageBody(BaseModel):
    agent: str
    user: str | None = None
    role: str
    content: str


class ScopeBody(BaseModel):
    agent: str
    user: str | None = None


# The answers, for the OpenAPI document only (`_doc`): the endpoints return the services' JSON.
class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class HitOut(BaseModel):
    id: str = Field(description="pass it to /memory/get")
    path: str
    start_line: int
    end_line: int
    score: float
    scope: str
    snippet: str
    tier: str


class SearchOut(BaseModel):
    hits: list[HitOut]
    notes: list[str]


class LinesOut(BaseModel):
    path: str
    scope: str
    from_line: int
    to_line: int
    total_lines: int
    text: str


class IndexOut(_Open):
    """What indexing did (files scanned, chunks written and embedded, ...)."""


class EntryOut(BaseModel):
    id: str
    path: str
    start_line: int
    end_line: int
    scope: str
    added: str
    tags: list[str]
    metadata: dict[str, Any]
    text: str
    corrected: str | None = None


class CorrectedOut(BaseModel):
    path: str
    start_line: int
    end_line: int
    id: str


class DeletedOut(BaseModel):
    path: str
    start_line: int
    end_line: int
    removed_lines: int


class RowOut(_Open):
    """A stored row: its fields, datetimes in ISO 8601."""


def _doc(model: Any, status: int = 200) -> dict[str, Any]:
    return {"response_model": None, "status_code": status, "responses": {status: {"model": model}}}


def router(engine: Any, auth: Callable[..., Any]) -> APIRouter:
    r = APIRouter()
    for add in (_read_routes, _write_routes, _session_routes):
        add(r, engine, Annotated[Any, Depends(auth)])
    return r


def _lines(path: str | None, from_line: int | None, to_line: int | None) -> tuple[int, int] | None:
    if path is None:
        return None
    if from_line is None:
        raise ValidationError("path needs from_line (and to_line)")
    return (from_line, to_line or from_line)


def _read_routes(r: APIRouter, engine: Any, Tok: Any) -> None:
    """Memory search, read and index (``goclaw memory search|get|index``)."""

    @r.post("/memory/search", tags=["memory"], **_doc(SearchOut))
    def memory_search(body: SearchBody, tok: Tok) -> dict[str, Any]:
        tok.check(body.agent, body.user)
        if body.channel == "hybrid":
            # What the memory_search tool answers, without the tool's cap for models (50).
            hits, notes = search_hits(
                engine, body.query, body.agent, body.user, body.limit, filters=body.filters
            )
            return {"hits": hits, "notes": notes}
        a = engine.agents.get(body.agent)
        resp = engine.memory.search_response(
            body.query, a, body.user, limit=body.limit, channel=body.channel, filters=body.filters
        )
        hits = []
        for h in resp.hits:
            loc = f"{h.path}#L{h.start_line}-L{h.end_line}"
            hits.append({"id": memory_hit_id("m", a.id, h.user_id, loc), **h.as_json()})
        return {"hits": neutralise_data(hits), "notes": resp.notes}

    @r.get("/memory/get", tags=["memory"], **_doc(LinesOut))
    def memory_get(
        tok: Tok,
        agent: str,
        user: str | None = None,
        id: str | None = None,
        path: str | None = None,
        from_line: Annotated[int | None, Query(ge=1)] = None,
        to_line: Annotated[int | None, Query(ge=1)] = None,
    ) -> dict[str, Any]:
        tok.check(agent, user)
        args = {
            k: v for k, v in {"id": id, "path": path, "from_line": from_line, "to_line": to_line}.items() if v
        }
        res = engine.tools.call("memory_get", args, ToolContext(agent, user), raise_errors=True)
        data: dict[str, Any] = res.data
        return data

    @r.post("/memory/index", tags=["memory"], **_doc(IndexOut))
    def memory_index(tok: Tok, body: Annotated[IndexBody | None, Body()] = None) -> dict[str, Any]:
        body = body or IndexBody()
        tok.check(body.agent, body.user)
        report = engine.memory.index(body.agent, body.user)
        data: dict[str, Any] = report.as_json()
        data.pop("changed_paths", None)
        return data


def _write_routes(r: APIRouter, engine: Any, Tok: Any) -> None:
    """The memory write API (``goclaw memory add|list|correct|delete``)."""

    @r.post("/memory", tags=["memory"], **_doc(EntryOut, 201))
    def memory_add(body: AddBody, tok: Tok) -> dict[str, Any]:
        tok.check(body.agent, body.user)
        entry = engine.memory.writer.add(
            body.agent, body.text, body.user, tags=body.tags, metadata=body.metadata, day=body.date
        )
        data: dict[str, Any] = entry.as_json()
        return data

    @r.get("/memory", tags=["memory"], **_doc(list[EntryOut]))
    def memory_list(
        tok: Tok,
        agent: str,
        user: str | None = None,
        tag: str | None = None,
        limit: Annotated[int | None, Query(ge=1)] = None,
    ) -> list[dict[str, Any]]:
        tok.check(agent, user)
        return [e.as_json() for e in engine.memory.writer.list(agent, user, tag=tag, limit=limit)]

    @r.patch("/memory", tags=["memory"], **_doc(CorrectedOut))
    def memory_correct(body: CorrectBody, tok: Tok) -> dict[str, Any]:
        tok.check(body.agent, body.user)
        lines = _lines(body.path, body.from_line, body.to_line)
        result: dict[str, Any] = engine.memory.writer.correct(
            body.agent, body.text, body.user, id=body.id, path=body.path, lines=lines
        )
        return result

    @r.delete("/memory", tags=["memory"], **_doc(DeletedOut))
    def memory_delete(
        tok: Tok,
        agent: str,
        user: str | None = None,
        id: str | None = None,
        path: str | None = None,
        from_line: int | None = None,
        to_line: int | None = None,
    ) -> dict[str, Any]:
        tok.check(agent, user)
        lines = _lines(path, from_line, to_line)
        result: dict[str, Any] = engine.memory.writer.delete(agent, user, id=id, path=path, lines=lines)
        return result


def _session_routes(r: APIRouter, engine: Any, Tok: Any) -> None:
    """Sessions (``goclaw session``); another agent's or user's session reads as missing."""

    def _own_session(key: str, agent: str, user: str | None, *, missing_ok: bool = False) -> None:
        """A session of another agent or user is reported as missing (never revealed)."""
        a = engine.agents.get(agent)
        try:
            row = engine.sessions.get(key)
        except NotFoundError:
            if missing_ok:
                return
            raise
        if row.agent_id != a.id or row.user_id != (user or ""):
            raise NotFoundError(f"no session {key!r} for this agent/user")

    @r.post("/sessions/{key}/messages", tags=["sessions"], **_doc(RowOut, 201))
    def session_append(key: str, body: MessageBody, tok: Tok) -> dict[str, Any]:
        tok.check(body.agent, body.user)
        _own_session(key, body.agent, body.user, missing_ok=True)  # a new key: append creates it
        msg = engine.sessions.append(body.agent, key, body.role, body.content, user=body.user)
        return row_json(msg)

    @r.get("/sessions/{key}/messages", tags=["sessions"], **_doc(list[RowOut]))
    def session_messages(key: str, tok: Tok, agent: str, user: str | None = None) -> list[dict[str, Any]]:
        tok.check(agent, user)
        _own_session(key, agent, user)
        return [row_json(m) for m in engine.sessions.messages(key)]

    @r.post("/sessions/{key}/end", tags=["sessions"], **_doc(RowOut))
    def session_end(key: str, body: ScopeBody, tok: Tok) -> dict[str, Any]:
        tok.check(body.agent, body.user)
        _own_session(key, body.agent, body.user)
        return row_json(engine.sessions.end(key))
