"""Runtime tools ``memory_search`` / ``memory_get`` and the Memory Recall prompt section.

The tools follow the tool calling contract (:mod:`goclaw.contracts.tools`): the runtime calls
``engine.tools.call("memory_search", {"query": "..."}, ToolContext(agent="ada", user="u1"))``;
the scope comes from the context only. Every hit carries an ``id``: for a memory file's lines
``m:<scope tag>:<path>#L<start>-L<end>`` (stable while the file's lines stay put), for an episodic
summary the summary's own id. ``memory_get`` accepts either (and a path); ``memory_expand``
accepts episodic ids. An id from another agent's or user's results is refused.

The older keyword form ``tool.func(query=..., agent=..., user=...)`` still works.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from goclaw.contracts.tools import FunctionTool, ToolContext, ToolResult
from goclaw.errors import ValidationError
from goclaw_memory.chunking import without_markers
from goclaw_memory.filters import FILTER_SCHEMA, parse_filters
from goclaw_memory.hit_ids import parse_memory_hit_id, split_line_locator
from goclaw_text.wrappers import neutralise_data

if TYPE_CHECKING:
    from goclaw.contracts.host import Host, PromptContext

MEMORY_TOOL_NAMES = frozenset({"memory_search", "memory_get"})

MEMORY_RECALL = (
    "## Memory Recall\n"
    "Before answering anything about prior work, decisions, dates, people, preferences or todos: "
    "run memory_search over MEMORY.md and memory/*.md, then use memory_get to pull only the lines "
    "you need. If you are still unsure after searching, say that you checked."
)


def search_hits(
    engine: Host,
    query: str,
    agent: Any,
    user: str | None,
    limit: int | None = None,
    channel: str = "hybrid",
    filters: Mapping[str, Any] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Document and extra-tier hits as JSON, each with its stable ``id`` and wrapper tags in
    their text neutralised; plus the notes.
    ``filters``: as :meth:`goclaw_memory.service.MemoryService.search_response` takes them."""
    a = engine.memory._agent(agent)
    limit = int(limit or engine.memory.settings.max_results)
    flt = parse_filters(filters, user)
    response = engine.memory.search_response(
        query, a, user, limit=limit, channel=channel, include_extra=False, filters=flt
    )
    rows: list[dict[str, Any]] = []
    for h in response.hits:
        rows.append(h.as_json())  # carries its stable id
    extra = engine.memory.extra_hits(query, a, user, limit, response.query_vector, flt)
    for e in extra:
        rows.append(
            {
                "id": str(e.id),
                "path": e.path or "",
                "start_line": int(e.start_line or 0),
                "end_line": int(e.end_line or 0),
                "score": round(float(e.score or 0.0), 6),
                "scope": e.scope or "agent",
                "snippet": e.text or "",
                "tier": e.tier or "extra",
            }
        )
    rows.sort(key=lambda r: (-r["score"], r["tier"] != "document", r["path"], r["start_line"]))
    # Stored text reaches a model or a client: wrapper tags in it are neutralised, as in the prompt.
    return neutralise_data(rows[:limit]), list(response.notes)


def _hits_text(hits: list[dict[str, Any]], notes: list[str]) -> str:
    if not hits:
        return "No memory matched." + ("".join(f"\nnote: {n}" for n in notes))
    lines = []
    for h in hits:
        where = f"{h['path']}:{h['start_line']}-{h['end_line']}" if h["tier"] == "document" else h["path"]
        snippet = " ".join(str(h["snippet"]).split())[:300]
        lines.append(f"[{h['id']}] {where} ({h['tier']}, score {h['score']:.3f})\n  {snippet}")
    return "\n".join(lines + [f"note: {n}" for n in notes])


def read_memory(
    engine: Host,
    context: ToolContext,
    *,
    hit_id: str | None = None,
    path: str | None = None,
    from_line: int | None = None,
    to_line: int | None = None,
) -> ToolResult:
    """``memory_get``: lines of a memory file of the caller's scope, by hit id or path."""
    if bool(hit_id) == bool(path):
        raise ValidationError("memory_get: give either id (from memory_search) or path")
    a = engine.memory._agent(context.agent)
    user = context.user
    if hit_id:
        if not hit_id.startswith("m:"):
            # Another tier's id: the plugin that owns it expands it (goclaw_memory_expand),
            # else it is an episodic summary's, which the memory_expand tool owns.
            found = engine.hooks.first("goclaw_memory_expand", engine=engine, id=hit_id, agent=a, user=user)
            if found is not None:
                return ToolResult(text=json.dumps(found, ensure_ascii=False, indent=1), data=found)
            return engine.tools.call("memory_expand", {"id": hit_id}, context)
        ref = parse_memory_hit_id(hit_id, a.id, user)
        path, start, end = split_line_locator(ref.locator)
        user = ref.user_id or None
        from_line = start if from_line is None else from_line
        to_line = end if to_line is None else to_line
    assert path is not None
    got = engine.memory.get(a, path, user, from_line=from_line, to_line=to_line)
    got = neutralise_data(got)  # stored text: no wrapper tag reaches the model intact
    header = f"{got['path']} lines {got['from_line']}-{got['to_line']} of {got['total_lines']}"
    # Entry marker lines are the memory API's bookkeeping: the model reads the memories only.
    text = without_markers(got["text"])
    return ToolResult(text=f"{header}\n{text}", data=got)


def make_tools(engine: Host) -> list[FunctionTool]:
    return [_search_tool(engine), _get_tool(engine), _add_tool(engine)]


def _search_tool(engine: Host) -> FunctionTool:
    def search(args: Mapping[str, Any], context: ToolContext) -> ToolResult:
        hits, notes = search_hits(
            engine,
            str(args["query"]),
            context.agent,
            context.user,
            args.get("limit"),
            filters=args.get("filters"),
        )
        return ToolResult(text=_hits_text(hits, notes), data={"hits": hits, "notes": notes})

    # The older keyword form (runtime scope and model arguments in one namespace).
    def memory_search_legacy(
        query: str,
        agent: Any,
        user: str | None = None,
        limit: int | None = None,
        channel: str = "hybrid",
        filters: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        response = engine.memory.search_response(
            query, agent, user, limit=limit, channel=channel, filters=filters
        )
        return [h.as_json() for h in response.hits]

    return FunctionTool(
        name="memory_search",
        description=(
            "Search long-term memory (MEMORY.md, memory/*.md, past-session summaries and "
            "knowledge-graph facts) by meaning and keywords, optionally filtered by tags, dates, "
            "path prefix or scope. Returns an id, path, line range, score and snippet per hit; "
            "pass the id to memory_get (or memory_expand for past sessions)."
        ),
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "what to look for"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                "filters": FILTER_SCHEMA,
            },
            "required": ["query"],
        },
        handler=search,
        func=memory_search_legacy,
    )


def _get_tool(engine: Host) -> FunctionTool:
    def get(args: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return read_memory(
            engine,
            context,
            hit_id=args.get("id"),
            path=args.get("path"),
            from_line=args.get("from_line"),
            to_line=args.get("to_line"),
        )

    # The older keyword form (runtime scope and model arguments in one namespace).
    def memory_get_legacy(
        path: str,
        agent: Any,
        user: str | None = None,
        from_line: int | None = None,
        to_line: int | None = None,
    ) -> dict[str, Any]:
        result: dict[str, Any] = engine.memory.get(agent, path, user, from_line=from_line, to_line=to_line)
        return result

    return FunctionTool(
        name="memory_get",
        description=(
            "Read lines of a memory file: by the id of a memory_search hit, or by path "
            "(as memory_search returns it) with an optional line range."
        ),
        parameters={
            "type": "object",
            "properties": {
                "id": {"type": "string", "minLength": 1, "description": "a memory_search hit id"},
                "path": {"type": "string", "minLength": 1},
                "from_line": {"type": "integer", "minimum": 1},
                "to_line": {"type": "integer", "minimum": 1},
            },
        },
        handler=get,
        func=memory_get_legacy,
    )


def _add_tool(engine: Host) -> FunctionTool:
    def add(args: Mapping[str, Any], context: ToolContext) -> ToolResult:
        entry = engine.memory.writer.add(
            context.agent, str(args["text"]), context.user, tags=args.get("tags")
        )
        data = neutralise_data(entry.as_json())
        done = "already stored as" if entry.existing else "saved as"
        return ToolResult(text=f"{done} {entry.id} in {entry.path}", data=data)

    return FunctionTool(
        name="memory_add",
        description=(
            "Save something worth remembering (a decision, preference, fact or todo) to "
            "long-term memory; it is searchable at once."
        ),
        parameters={
            "type": "object",
            "properties": {
                "text": {"type": "string", "minLength": 1, "maxLength": 20000},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
            },
            "required": ["text"],
        },
        handler=add,
    )


@dataclass(frozen=True)
class MemoryRecallSection:
    """Prompt section 5 (full and task modes), shown when the memory tools are available."""

    name: str = "memory_recall"
    order: float = 5
    modes: frozenset[str] = frozenset({"full", "task"})

    def render(self, ctx: PromptContext) -> str | None:
        offered = {t.name for t in ctx.request.tools}
        if offered:
            return MEMORY_RECALL if offered & MEMORY_TOOL_NAMES else None
        try:
            names = {t.name for t in ctx.engine.hooks.tools(ctx.engine)}
        except Exception:
            return None
        return MEMORY_RECALL if names & MEMORY_TOOL_NAMES else None
