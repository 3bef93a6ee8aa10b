"""The ``/v1`` endpoints of ``goclaw serve`` (imported only when the server starts).

Each endpoint checks the bearer token's scope for its ``agent``/``user`` before doing anything,
then calls the same engine service as the CLI command of the same name.
"""

# No `from __future__ import annotations` here: FastAPI reads the endpoints' annotations, and
# the token dependency (`Tok`) is local to each route group.
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, Query

from goclaw.contracts.tools import ToolContext, memory_hit_id
from goclaw.errors import NotFoundError, ValidationError
from goclaw.server.bodies import (
    AddBody,
    CorrectBody,
    FileBody,
    IndexBody,
    MessageBody,
    PromptBody,
    ScopeBody,
    SearchBody,
    ToolCallBody,
)
from goclaw.server.tokens import ANY, TokenRecord

if TYPE_CHECKING:
    from goclaw.engine import Engine
    from goclaw.server.tokens import TokenStore

ADMIN = TokenRecord(name="(no auth)", sha256="", agents=[ANY], users=[ANY])


def _lines(path: str | None, from_line: int | None, to_line: int | None) -> tuple[int, int] | None:
    if path is None:
        return None
    if from_line is None:
        raise ValidationError("path needs from_line (and to_line)")
    return (from_line, to_line or from_line)


def _row(obj: Any) -> dict[str, Any]:
    data = obj.model_dump() if hasattr(obj, "model_dump") else dict(obj)
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "embedding" or key.startswith("embedding_"):
            continue
        out[key] = value.isoformat() if isinstance(value, datetime) else value
    return out


def build_router(engine: "Engine", tokens: "TokenStore | None") -> APIRouter:
    """The ``/v1`` router: every endpoint group below, registered in this order (a fixed path
    such as ``/skills/search`` before the ``/skills/{slug}`` it would otherwise match)."""
    auth = _authenticator(tokens)
    r = APIRouter(prefix="/v1")
    for add in (
        _core_routes,
        _prompt_routes,
        _file_routes,
        _skill_routes,
        _memory_read_routes,
        _memory_write_routes,
        _session_routes,
        _worker_and_kg_routes,
        _tool_routes,
    ):
        add(r, engine, auth)
    return r


def _authenticator(tokens: "TokenStore | None") -> Callable[..., TokenRecord]:
    """The dependency that turns the ``Authorization`` header into the caller's token record."""
    from goclaw.server.http import AuthError

    def auth(authorization: Annotated[str | None, Header()] = None) -> TokenRecord:
        if tokens is None:
            return ADMIN
        if not authorization or not authorization.lower().startswith("bearer "):
            raise AuthError("missing bearer token (Authorization: Bearer <token>)")
        record = tokens.verify(authorization[7:].strip())
        if record is None:
            raise AuthError("unknown or revoked token")
        return record

    return auth


def _core_routes(r: APIRouter, engine: "Engine", auth: Callable[..., TokenRecord]) -> None:
    """Health (no token) and the agent list."""
    Tok = Annotated[TokenRecord, Depends(auth)]

    @r.get("/health", tags=["server"])
    def health() -> dict[str, Any]:
        return {"status": "ok"}

    @r.get("/agents", tags=["agents"])
    def agents(tok: Tok) -> list[dict[str, Any]]:
        tok.check(None, None)
        return [{"name": a.name, "type": a.agent_type} for a in engine.agents.list()]


def _prompt_routes(r: APIRouter, engine: "Engine", auth: Callable[..., TokenRecord]) -> None:
    """The assembled system prompt (``goclaw prompt``)."""
    Tok = Annotated[TokenRecord, Depends(auth)]

    @r.post("/prompt", tags=["prompt"])
    def prompt(body: PromptBody, tok: Tok) -> dict[str, Any]:
        from goclaw.contracts.hooks import PromptRequest, ToolInfo

        tok.check(body.agent, body.user)
        request = PromptRequest(
            agent=body.agent,
            user=body.user,
            mode=body.mode,
            session_key=body.session_key,
            message=body.message,
            channel=body.channel,
            tools=tuple(ToolInfo(t) for t in body.tools),
            extra_prompt=body.extra_prompt,
        )
        result: dict[str, Any] = engine.prompt.build(request).as_dict()
        return result


def _file_routes(r: APIRouter, engine: "Engine", auth: Callable[..., TokenRecord]) -> None:
    """Context files (``goclaw files``)."""
    Tok = Annotated[TokenRecord, Depends(auth)]

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


def _skill_routes(r: APIRouter, engine: "Engine", auth: Callable[..., TokenRecord]) -> None:
    """Skills: list, search, show (``goclaw skills``)."""
    Tok = Annotated[TokenRecord, Depends(auth)]

    @r.get("/skills", tags=["skills"])
    def skills_list(tok: Tok, agent: str, user: str | None = None) -> list[dict[str, Any]]:
        tok.check(agent, user)
        return [s.as_dict() for s in engine.skills.list(agent, user)]

    @r.get("/skills/search", tags=["skills"])
    def skills_search(tok: Tok, q: str, agent: str, user: str | None = None) -> list[dict[str, Any]]:
        tok.check(agent, user)
        return [h.as_dict() for h in engine.skills.search(q, agent, user)]

    @r.get("/skills/{slug}", tags=["skills"])
    def skills_show(slug: str, tok: Tok, agent: str, user: str | None = None) -> dict[str, Any]:
        tok.check(agent, user)
        hit = engine.skills.show(slug, agent, user)
        data: dict[str, Any] = hit.as_dict()
        data["content"] = hit.record.instructions()
        return data


def _memory_read_routes(r: APIRouter, engine: "Engine", auth: Callable[..., TokenRecord]) -> None:
    """Memory search, read and index (``goclaw memory search|get|index``)."""
    Tok = Annotated[TokenRecord, Depends(auth)]

    @r.post("/memory/search", tags=["memory"])
    def memory_search(body: SearchBody, tok: Tok) -> dict[str, Any]:
        tok.check(body.agent, body.user)
        if body.channel == "hybrid":
            args: dict[str, Any] = {"query": body.query}
            if body.limit:
                args["limit"] = min(body.limit, 50)
            res = engine.tools.call(
                "memory_search", args, ToolContext(body.agent, body.user), raise_errors=True
            )
            data: dict[str, Any] = res.data
            return data
        a = engine.agents.get(body.agent)
        resp = engine.memory.search_response(body.query, a, body.user, limit=body.limit, channel=body.channel)
        hits = []
        for h in resp.hits:
            loc = f"{h.path}#L{h.start_line}-L{h.end_line}"
            hits.append({"id": memory_hit_id("m", a.id, h.user_id, loc), **h.as_json()})
        return {"hits": hits, "notes": resp.notes}

    @r.get("/memory/get", tags=["memory"])
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

    @r.post("/memory/index", tags=["memory"])
    def memory_index(tok: Tok, body: Annotated[IndexBody | None, Body()] = None) -> dict[str, Any]:
        body = body or IndexBody()
        tok.check(body.agent, body.user)
        report = engine.memory.index(body.agent, body.user)
        data: dict[str, Any] = report.as_json()
        data.pop("changed_paths", None)
        return data


def _memory_write_routes(r: APIRouter, engine: "Engine", auth: Callable[..., TokenRecord]) -> None:
    """The memory write API (``goclaw memory add|list|correct|delete``)."""
    Tok = Annotated[TokenRecord, Depends(auth)]

    @r.post("/memory", tags=["memory"], status_code=201)
    def memory_add(body: AddBody, tok: Tok) -> dict[str, Any]:
        tok.check(body.agent, body.user)
        entry = engine.memory.writer.add(
            body.agent, body.text, body.user, tags=body.tags, metadata=body.metadata, day=body.date
        )
        data: dict[str, Any] = entry.as_json()
        return data

    @r.get("/memory", tags=["memory"])
    def memory_list(
        tok: Tok, agent: str, user: str | None = None, tag: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        tok.check(agent, user)
        return [e.as_json() for e in engine.memory.writer.list(agent, user, tag=tag, limit=limit)]

    @r.patch("/memory", tags=["memory"])
    def memory_correct(body: CorrectBody, tok: Tok) -> dict[str, Any]:
        tok.check(body.agent, body.user)
        lines = _lines(body.path, body.from_line, body.to_line)
        result: dict[str, Any] = engine.memory.writer.correct(
            body.agent, body.text, body.user, id=body.id, path=body.path, lines=lines
        )
        return result

    @r.delete("/memory", tags=["memory"])
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


def _session_routes(r: APIRouter, engine: "Engine", auth: Callable[..., TokenRecord]) -> None:
    """Sessions (``goclaw session``); another agent's or user's session reads as missing."""
    Tok = Annotated[TokenRecord, Depends(auth)]

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

    @r.post("/sessions/{key}/messages", tags=["sessions"], status_code=201)
    def session_append(key: str, body: MessageBody, tok: Tok) -> dict[str, Any]:
        tok.check(body.agent, body.user)
        _own_session(key, body.agent, body.user, missing_ok=True)  # a new key: append creates it
        msg = engine.sessions.append(body.agent, key, body.role, body.content, user=body.user)
        return _row(msg)

    @r.get("/sessions/{key}/messages", tags=["sessions"])
    def session_messages(key: str, tok: Tok, agent: str, user: str | None = None) -> list[dict[str, Any]]:
        tok.check(agent, user)
        _own_session(key, agent, user)
        return [_row(m) for m in engine.sessions.messages(key)]

    @r.post("/sessions/{key}/end", tags=["sessions"])
    def session_end(key: str, body: ScopeBody, tok: Tok) -> dict[str, Any]:
        tok.check(body.agent, body.user)
        _own_session(key, body.agent, body.user)
        return _row(engine.sessions.end(key))


def _worker_and_kg_routes(r: APIRouter, engine: "Engine", auth: Callable[..., TokenRecord]) -> None:
    """One worker pass and the knowledge graph (``goclaw workers``, ``goclaw kg``)."""
    Tok = Annotated[TokenRecord, Depends(auth)]

    @r.post("/workers/run-once", tags=["workers"])
    def workers_run_once(tok: Tok) -> dict[str, Any]:
        from goclaw.events import WorkerRunner

        tok.check(None, None)
        report: dict[str, Any] = WorkerRunner(engine).run_once().as_dict()
        return report

    @r.get("/kg/entities", tags=["kg"])
    def kg_entities(
        tok: Tok, agent: str, user: str | None = None, as_of: datetime | None = None
    ) -> list[Any]:
        tok.check(agent, user)
        return [_row(e) for e in engine.kg.entities(agent, user, as_of=as_of)]

    @r.get("/kg/relations", tags=["kg"])
    def kg_relations(
        tok: Tok, agent: str, user: str | None = None, as_of: datetime | None = None
    ) -> list[Any]:
        tok.check(agent, user)
        out = []
        for rel, names in engine.kg.relations(agent, user, as_of=as_of):
            row = _row(rel)
            row["source"] = names.get(rel.source_entity_id, rel.source_entity_id)
            row["target"] = names.get(rel.target_entity_id, rel.target_entity_id)
            out.append(row)
        return out


def _tool_routes(r: APIRouter, engine: "Engine", auth: Callable[..., TokenRecord]) -> None:
    """The runtime tools under the tool calling contract."""
    Tok = Annotated[TokenRecord, Depends(auth)]

    @r.get("/tools", tags=["tools"])
    def tools_list(
        tok: Tok, agent: str, user: str | None = None, format: str = "openai"
    ) -> list[dict[str, Any]]:
        tok.check(agent, user)
        return engine.tools.schemas(format, ToolContext(agent, user))

    @r.post("/tools/{name}", tags=["tools"])
    def tools_call(name: str, body: ToolCallBody, tok: Tok) -> dict[str, Any]:
        tok.check(body.agent, body.user)
        ctx = ToolContext(agent=body.agent, user=body.user, session=body.session, channel=body.channel)
        return engine.tools.call(name, body.arguments, ctx).as_json()
