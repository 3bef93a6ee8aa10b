"""Plugin ``goclaw.context_files``: context files stored in the database.

Agent-level files live in ``agent_context_files``, per-user files in ``user_context_files``.
This plugin offers the ``files`` service (``engine.files``) and the two default context-file
sources: agent level (order 10) then per user (order 20, so a user's copy overrides the
agent's same-name file while agent-only files survive). It also gives runtimes the
chat-path file tools ``read_context_file`` / ``write_context_file``: they apply the
write rules of a model's write, and answer "already loaded in system prompt" for virtual files.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from goclaw import hookimpl
from goclaw.contracts.hooks import Tool
from goclaw_context_files.store import ContextFileStore, DatabaseFileSource
from goclaw_text.wrappers import neutralise


class ContextFilesSettings(BaseModel):
    """``[plugins.context_files]``"""

    max_file_chars: int = Field(
        default=1_000_000, ge=1, description="largest context file accepted on write (characters)"
    )
    cache_seconds: float = Field(
        default=5.0,
        ge=0,
        description="how long a cached context file may be trusted without re-reading the database "
        "(writes in this process invalidate at once; 0 = never cache)",
    )


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    return ContextFilesSettings


@hookimpl
def goclaw_services(engine: Any) -> dict[str, Any]:
    return {"files": ContextFileStore(engine)}


@hookimpl
def goclaw_context_file_sources() -> list[Any]:
    return [
        DatabaseFileSource("agent-files", 10, per_user=False),
        DatabaseFileSource("user-files", 20, per_user=True),
    ]


@hookimpl
def goclaw_tools(engine: Any) -> list[Tool]:
    """The model's file tools for context files (the chat path of ``engine.files``)."""
    store: ContextFileStore = engine.files

    def read_context_file(agent: str, name: str, user: str | None = None) -> str:
        # The file's text reaches the model as a tool result: wrapper tags in it are
        # neutralised, as in the prompt's <context_file> block.
        return neutralise(store.read_from_chat(agent, user, name))

    def write_context_file(agent: str, user: str, name: str, content: str) -> str:
        action = store.write_from_chat(agent, user, name, content)
        return f"{name} deleted" if action == "deleted" else f"{name} saved ({len(content)} characters)"

    name_param = {"type": "string", "description": "file name, e.g. USER.md"}
    scope = {
        "agent": {"type": "string", "description": "the agent (filled in by the runtime)"},
        "user": {"type": "string", "description": "the user (filled in by the runtime)"},
    }
    return [
        Tool(
            name="read_context_file",
            description="Read one of your context files (AGENTS.md, SOUL.md, USER.md, ...).",
            parameters={
                "type": "object",
                "properties": {**scope, "name": name_param},
                "required": ["agent", "name"],
            },
            func=read_context_file,
        ),
        Tool(
            name="write_context_file",
            description=(
                "Write one of your context files. Writing BOOTSTRAP.md empty ends the first-run "
                "ritual. Shared files of a predefined agent cannot be changed from a chat."
            ),
            parameters={
                "type": "object",
                "properties": {**scope, "name": name_param, "content": {"type": "string"}},
                "required": ["agent", "user", "name", "content"],
            },
            func=write_context_file,
        ),
    ]


@hookimpl
def goclaw_http_routes(engine: Any, auth: Any) -> Any:
    from goclaw_context_files.http import router

    return router(engine, auth)
