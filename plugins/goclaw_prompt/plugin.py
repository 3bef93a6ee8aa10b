"""Plugin ``goclaw.prompt``: prompt modes, mode resolution and the ``prompt`` service.

The sections themselves are separate default plugins (``goclaw.section.<name>``, modules in
``goclaw_prompt.sections``), so one can be disabled or replaced without touching the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from goclaw import hookimpl
from goclaw.contracts.hooks import McpPrompt, PromptMode, PromptRequest, ToolInfo
from goclaw_prompt.builder import PromptService
from goclaw_prompt.modes import is_subagent_or_cron
from goclaw_prompt.truncate import TruncateConfig

MINIMAL_FILES = frozenset({"AGENTS.md", "TOOLS.md"})
# Task mode (a delegated task that keeps the persona): the operating rules, tool notes and the
# persona files, never the user's files or the first-run ritual.
TASK_FILES = frozenset({"AGENTS.md", "TOOLS.md", "SOUL.md", "IDENTITY.md"})


class PromptSettings(TruncateConfig):
    """``[plugins.prompt]``: context-file truncation and knobs of the default sections.

    The prompt owns truncation: it applies to every context file whatever plugins are
    disabled."""

    spawn_tools: list[str] = Field(
        default_factory=lambda: ["spawn", "spawn_subagent", "sessions_spawn", "subagent"],
        description="tool names that start a sub-agent (turn on the Sub-Agent Spawning section)",
    )
    file_tool: str = Field(
        default="write_context_file", description="the tool the model writes its context files with"
    )


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    return PromptSettings


@hookimpl
def goclaw_prompt_modes() -> list[PromptMode]:
    return [
        PromptMode("full", "every section (normal sessions)"),
        PromptMode(
            "task",
            "a delegated task: full mode without the user-facing sections (user identity, "
            "messaging, silent replies, Memory Context); AGENTS.md, TOOLS.md, SOUL.md and "
            "IDENTITY.md",
            TASK_FILES,
        ),
        PromptMode(
            "minimal",
            "subagent, cron and heartbeat sessions: core sections, AGENTS.md and TOOLS.md only",
            MINIMAL_FILES,
        ),
    ]


@hookimpl(trylast=True)
def goclaw_resolve_prompt_mode(request: PromptRequest) -> str:
    return "minimal" if is_subagent_or_cron(request.session_key) else "full"


@hookimpl
def goclaw_services(engine: Any) -> dict[str, Any]:
    return {"prompt": PromptService(engine)}


@hookimpl
def goclaw_mcp_prompts(engine: Any) -> list[McpPrompt]:
    """``system_prompt`` (and the resource ``goclaw://prompt/system``): the assembled system
    prompt of the MCP server's scope, with the tools it offers there."""

    def render(context: Any, arguments: Mapping[str, str]) -> str:
        tools = tuple(ToolInfo(t.name, t.description) for t in engine.tools.list(context))
        request = PromptRequest(
            agent=context.agent,
            user=context.user,
            mode=arguments.get("mode"),
            message=arguments.get("message"),
            tools=tools,
        )
        text: str = engine.prompt.build(request).prompt
        return text

    return [
        McpPrompt(
            "system_prompt",
            "system prompt",
            "The assembled system prompt of agent {agent}",
            render,
            (("mode", "full, task or minimal"), ("message", "this turn's message")),
            uri="goclaw://prompt/system",
        )
    ]


@hookimpl
def goclaw_http_routes(engine: Any, auth: Any) -> Any:
    from goclaw_prompt.http import router

    return router(engine, auth)
