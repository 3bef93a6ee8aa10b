"""An agent loop that uses goclaw in process: system prompt, tools, memory (docs/runtime.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from goclaw import Engine
from goclaw.contracts.hooks import PromptRequest, ToolInfo
from goclaw.contracts.tools import ToolContext


def run_turn(
    engine: Engine,
    ctx: ToolContext,
    history: list[dict[str, Any]],
    message: str,
    *,
    model: str = "gpt-4o-mini",
    complete: Callable[..., Any] | None = None,
    max_steps: int = 5,
) -> str:
    """One user turn: build the prompt, let the model call tools, return its answer."""
    import litellm

    complete = complete or litellm.completion
    tools = engine.tools.openai(ctx)  # declarations without agent/user: the runtime owns those
    offered = tuple(ToolInfo(t["function"]["name"], t["function"]["description"]) for t in tools)
    prompt = engine.prompt.build(
        PromptRequest(agent=ctx.agent, user=ctx.user, session_key=ctx.session, message=message, tools=offered)
    )
    messages = [{"role": "system", "content": prompt.prompt}, *history, {"role": "user", "content": message}]
    for _ in range(max_steps):
        reply = complete(model=model, messages=messages, tools=tools).choices[0].message
        if not reply.tool_calls:
            answer = reply.content or ""
            engine.sessions.append(ctx.agent, ctx.session, "user", message, user=ctx.user)
            engine.sessions.append(ctx.agent, ctx.session, "assistant", answer, user=ctx.user)
            return answer
        messages.append(reply.model_dump())
        for call in reply.tool_calls:
            # The model's arguments (a JSON string) are validated; the scope comes from ctx.
            result = engine.tools.call(call.function.name, call.function.arguments, ctx)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result.text})
    return "(stopped: too many tool calls)"


if __name__ == "__main__":
    import sys

    with Engine.open(sys.argv[1] if len(sys.argv) > 1 else ".") as eng:
        context = ToolContext(agent="support", user="ada", session="agent:support:demo")
        print(run_turn(eng, context, [], "What did we decide about the Friday deploys?"))
        print(json.dumps(eng.tools.anthropic(context)[0], indent=2))
