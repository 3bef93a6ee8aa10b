"""The JSON bodies of the server's own ``/v1`` endpoints (:mod:`goclaw_http.routes`), requests and
answers, and the error answers every endpoint documents; a plugin's endpoints declare their own.

Answer models document the OpenAPI schema only (:func:`documented`): the endpoints return the
engine's JSON as it is, so a field an engine service adds is never filtered out."""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ToolCallBody(BaseModel):
    agent: str
    user: str | None = None
    session: str | None = None
    channel: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict, description="the model's arguments")


class ErrorDetail(BaseModel):
    type: str = Field(description="the error's class, e.g. NotFoundError or ValidationError")
    message: str = Field(description="one line")


class ErrorOut(BaseModel):
    """Every error answer: ``{"error": {"type": ..., "message": ...}}``."""

    error: ErrorDetail


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorOut, "description": text}
    for status, text in {
        400: "a bad request or configuration",
        401: "missing, unknown or revoked bearer token",
        403: "outside the token's scope (agent or user)",
        404: "no such agent, user, file, memory, session or tool",
        413: "request body over the server's --max-body",
        422: "invalid parameters or body",
        500: "an internal error (or the server's token file is unreadable)",
        501: "the feature is disabled in this workspace",
        503: "the database is unavailable",
    }.items()
}


def documented(model: Any, status: int = 200) -> dict[str, Any]:
    """Route keywords declaring ``model`` as the answer's schema in the OpenAPI document only."""
    return {"response_model": None, "status_code": status, "responses": {status: {"model": model}}}


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class HealthOut(BaseModel):
    status: str = Field(examples=["ok"])


class AgentOut(BaseModel):
    name: str
    type: str


class WorkersOut(_Open):
    """What one pass of the consolidation workers did (counts per worker)."""


class ToolDeclarationOut(_Open):
    """A tool's declaration in the format asked for: OpenAI's, Anthropic's or MCP's shape."""


class ToolResultOut(BaseModel):
    text: str = Field(description="the answer for the model")
    data: Any = Field(description="the same answer as JSON for the runtime")
    is_error: bool
