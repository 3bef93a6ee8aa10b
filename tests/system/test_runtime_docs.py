"""docs/runtime.md's examples run: the Python loop with a fake model (litellm mock responses)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from goclaw.contracts.tools import ToolContext
from tests.helpers import load_script
from tests.memory_helpers import write

ROOT = Path(__file__).resolve().parents[2]


def _load_example() -> Any:
    return load_script(ROOT / "examples" / "runtime_loop.py")


def test_python_loop_example(engine: Any) -> None:
    import litellm

    engine.agents.create("support")
    write(engine.agent_dir(engine.agents.get("support")), "MEMORY.md", "We stopped Friday deploys in May.\n")
    engine.memory.index("support")
    seen: list[dict[str, Any]] = []

    def fake_model(**kwargs: Any) -> Any:
        seen.append(kwargs)
        if len(seen) == 1:  # the model first searches memory, trying to widen its scope
            args = {"query": "Friday deploys"}
            calls = [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "memory_search", "arguments": json.dumps(args)},
                }
            ]
            calls.append(
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "memory_search", "arguments": '{"query": "x", "user": "bob"}'},
                }
            )
            return litellm.completion(**kwargs, mock_response="", mock_tool_calls=calls)
        return litellm.completion(**kwargs, mock_response="We stopped Friday deploys in May.")

    ctx = ToolContext(agent="support", user="ada", session="agent:support:t1")
    answer = _load_example().run_turn(engine, ctx, [], "Do we deploy on Fridays?", complete=fake_model)
    assert answer == "We stopped Friday deploys in May."
    system = seen[0]["messages"][0]["content"]
    assert "Memory Recall" in system
    declared = {t["function"]["name"] for t in seen[0]["tools"]}
    assert "memory_search" in declared
    tool_msgs = [m for m in seen[1]["messages"] if m["role"] == "tool"]
    assert "MEMORY.md" in tool_msgs[0]["content"]
    assert "cannot be set by the model" in tool_msgs[1]["content"]
    assert [m.role for m in engine.sessions.messages("agent:support:t1")] == ["user", "assistant"]
