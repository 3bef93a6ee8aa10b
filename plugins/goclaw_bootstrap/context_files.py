"""Plugin ``goclaw.context_files``: context files stored in the database (spec §4).

Agent-level files live in ``agent_context_files``, per-user files in ``user_context_files``.
This plugin offers the ``files`` service (``engine.files``) and the two default context-file
sources: agent level (order 10) then per user (order 20, so a user's copy overrides the
agent's same-name file while agent-only files survive, spec §6).
"""

from __future__ import annotations

from typing import Any

from goclaw import hookimpl
from goclaw_bootstrap.store import ContextFileStore, DatabaseFileSource
from pydantic import BaseModel, Field


class ContextFilesSettings(BaseModel):
    """``[plugins.context_files]``"""

    max_file_chars: int = Field(
        default=1_000_000, ge=1, description="largest context file accepted on write (characters)"
    )


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    return ContextFilesSettings


@hookimpl
def goclaw_services(engine: Any) -> dict[str, Any]:
    return {"files": ContextFileStore(engine)}


@hookimpl
def goclaw_context_file_sources() -> list[Any]:
    return [DatabaseFileSource("agent-files", 10, per_user=False), DatabaseFileSource("user-files", 20, per_user=True)]
