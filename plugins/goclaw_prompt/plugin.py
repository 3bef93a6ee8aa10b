"""Plugin ``goclaw.prompt``: prompt modes, mode resolution and the ``prompt`` service (spec §5).

The builder and the default sections arrive with issue 3; until then ``engine.prompt``
reports that prompt building is not available yet.
"""

from __future__ import annotations

from typing import Any

from goclaw import hookimpl
from goclaw.errors import FeatureUnavailableError
from goclaw.types import PromptMode, PromptRequest


@hookimpl
def goclaw_prompt_modes() -> list[PromptMode]:
    return [
        PromptMode("full", "every section (normal sessions)"),
        PromptMode(
            "minimal",
            "subagent and cron sessions: core sections, AGENTS.md and TOOLS.md only",
            frozenset({"AGENTS.md", "TOOLS.md"}),
        ),
    ]


@hookimpl(trylast=True)
def goclaw_resolve_prompt_mode(request: PromptRequest) -> str:
    key = (request.session_key or "").lower()
    parts = key.split(":")
    if len(parts) >= 3 and parts[0] == "agent" and parts[2] in {"subagent", "cron"}:
        return "minimal"
    return "full"


class _PendingPromptService:
    def build(self, *args: Any, **kwargs: Any) -> Any:
        raise FeatureUnavailableError("prompt building is not available yet")


@hookimpl
def goclaw_services(engine: Any) -> dict[str, Any]:
    return {"prompt": _PendingPromptService()}
