"""``POST /v1/prompt``: the assembled system prompt (``goclaw prompt``), for ``goclaw serve``.
Imported only when the server starts (hook ``goclaw_http_routes``)."""

# No `from __future__ import annotations`: FastAPI reads the endpoint's annotations.
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field


class PromptBody(BaseModel):
    agent: str
    user: str | None = None
    mode: str | None = None
    session_key: str | None = None
    message: str | None = None
    channel: str | None = None
    tools: list[str] = Field(default_factory=list, description="tool names offered this turn")
    extra_prompt: str | None = None


class PromptOut(BaseModel):
    """The assembled system prompt and how it was made (the OpenAPI schema only: the endpoint
    returns the prompt service's JSON as it is)."""

    prompt: str
    mode: str
    sections: list[dict[str, Any]] = Field(description="each section's name, order and size")
    files: list[dict[str, Any]] = Field(description="the context files it holds")
    skills_mode: str | None = None
    activated_skill: str | None = None
    reply: str | None = None


def router(engine: Any, auth: Callable[..., Any]) -> APIRouter:
    Tok = Annotated[Any, Depends(auth)]
    r = APIRouter()

    @r.post("/prompt", tags=["prompt"], response_model=None, responses={200: {"model": PromptOut}})
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

    return r
