"""Runtime tools ``memory_search`` / ``memory_get`` and the Memory Recall prompt section (spec §5, §17).

The runtime hands the model these tools; it calls ``func`` with the model's arguments plus the
run's ``agent`` (and ``user``) as keywords, e.g. ``tool.func(query="...", agent="ada", user="u1")``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from goclaw.types import Tool

if TYPE_CHECKING:
    from goclaw.engine import Engine
    from goclaw.types import PromptContext

MEMORY_TOOL_NAMES = frozenset({"memory_search", "memory_get"})

MEMORY_RECALL = (
    "## Memory Recall\n"
    "Before answering anything about prior work, decisions, dates, people, preferences or todos: "
    "run memory_search over MEMORY.md and memory/*.md, then use memory_get to pull only the lines "
    "you need. If you are still unsure after searching, say that you checked."
)


def make_tools(engine: Engine) -> list[Tool]:
    def memory_search(
        query: str,
        agent: Any,
        user: str | None = None,
        limit: int | None = None,
        channel: str = "hybrid",
    ) -> list[dict[str, Any]]:
        response = engine.memory.search_response(query, agent, user, limit=limit, channel=channel)
        return [h.as_json() for h in response.hits]

    def memory_get(
        path: str,
        agent: Any,
        user: str | None = None,
        from_line: int | None = None,
        to_line: int | None = None,
    ) -> dict[str, Any]:
        result: dict[str, Any] = engine.memory.get(agent, path, user, from_line=from_line, to_line=to_line)
        return result

    return [
        Tool(
            name="memory_search",
            description=(
                "Search long-term memory (MEMORY.md, memory/*.md and past-session summaries) by "
                "meaning and keywords. Returns path, line range, score and a snippet per hit."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "what to look for"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                },
                "required": ["query"],
            },
            func=memory_search,
        ),
        Tool(
            name="memory_get",
            description=(
                "Read lines of a memory file found by memory_search (paths as memory_search returns them)."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "from_line": {"type": "integer", "minimum": 1},
                    "to_line": {"type": "integer", "minimum": 1},
                },
                "required": ["path"],
            },
            func=memory_get,
        ),
    ]


@dataclass(frozen=True)
class MemoryRecallSection:
    """Spec §5 section 5 (full mode only), shown when the memory tools are available."""

    name: str = "memory_recall"
    order: float = 5
    modes: frozenset[str] = frozenset({"full"})

    def render(self, ctx: PromptContext) -> str | None:
        offered = {t.name for t in ctx.request.tools}
        if offered:
            return MEMORY_RECALL if offered & MEMORY_TOOL_NAMES else None
        try:
            names = {t.name for t in ctx.engine.hooks.tools(ctx.engine)}
        except Exception:
            return None
        return MEMORY_RECALL if names & MEMORY_TOOL_NAMES else None
