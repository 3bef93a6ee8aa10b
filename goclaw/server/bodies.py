"""The JSON request bodies of the ``/v1`` endpoints (:mod:`goclaw.server.routes`)."""

from typing import Any

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


class FileBody(BaseModel):
    agent: str
    user: str | None = None
    content: str


class SearchBody(BaseModel):
    agent: str
    user: str | None = None
    query: str
    limit: int | None = Field(default=None, ge=1, le=1000)
    channel: str = "hybrid"


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


class ToolCallBody(BaseModel):
    agent: str
    user: str | None = None
    session: str | None = None
    channel: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict, description="the model's arguments")
