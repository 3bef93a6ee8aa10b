"""Prompt modes beyond full and minimal: heartbeat sessions get ``minimal`` (an explicit mode
cannot widen them), and the ``task`` mode keeps the persona without the user-facing parts."""

from __future__ import annotations

from typing import Any

from goclaw.contracts.hooks import PromptRequest, ToolInfo

TOOLS = (ToolInfo("memory_search", "search memory"), ToolInfo("memory_get", "read memory"))


def test_heartbeat_sessions_get_the_minimal_prompt(engine: Any) -> None:
    engine.agents.create("op", "open")
    for key in ("agent:op:heartbeat", "agent:op:HEARTBEAT:tick", "agent:op:heartbeat-5m"):
        result = engine.prompt.build_for("op", "u", session_key=key)
        assert result.mode == "minimal", key
        assert [f["name"] for f in result.files] == ["AGENTS.md", "TOOLS.md"]
        forced = engine.prompt.build_for("op", "u", session_key=key, mode="full")
        assert forced.mode == "minimal" and 'name="SOUL.md"' not in forced.prompt
    # a key whose third part only contains the word is a normal session
    assert engine.prompt.build_for("op", "u", session_key="agent:op:main:heartbeat").mode == "full"


def test_task_mode_keeps_the_persona_without_the_user_facing_parts(engine: Any) -> None:
    engine.agents.create("op", "open")
    engine.files.set("op", "AGENTS.md", "rules", user="u")
    engine.files.set("op", "SOUL.md", "calm and precise", user="u")
    engine.files.set("op", "IDENTITY.md", "- **Name:** Op", user="u")
    engine.files.set("op", "USER.md", "- **Name:** Ann", user="u")
    request = PromptRequest(agent="op", user="u", mode="task", tools=TOOLS, channel="telegram")
    task = engine.prompt.build(request)
    full = engine.prompt.build(PromptRequest(agent="op", user="u", tools=TOOLS, channel="telegram"))
    assert task.mode == "task"
    names = [s["name"] for s in task.sections]
    assert "memory_recall" in names and "project_context" in names and "runtime" in names
    for user_facing in ("user_identity", "messaging", "silent_replies", "memory_context"):
        assert user_facing not in names
    assert {"user_identity", "messaging", "silent_replies"} <= {s["name"] for s in full.sections}
    assert [f["name"] for f in task.files] == ["AGENTS.md", "SOUL.md", "IDENTITY.md"]
    assert "calm and precise" in task.prompt and "Ann" not in task.prompt
