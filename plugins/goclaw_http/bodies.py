"""The JSON request bodies of the server's own ``/v1`` endpoints (:mod:`goclaw_http.routes`); a
plugin's endpoints declare their own."""

from typing import Any

from pydantic import BaseModel, Field


class ToolCallBody(BaseModel):
    agent: str
    user: str | None = None
    session: str | None = None
    channel: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict, description="the model's arguments")
