"""The tool calling contract: scope from the runtime, validated model arguments,
one result shape, schema export, and memory hit ids that cannot cross scopes."""

from __future__ import annotations

from typing import Any

import pytest

from goclaw.contracts.tools import ToolContext, ToolResult, model_schema, validate_arguments
from goclaw.errors import ValidationError
from tests.memory_helpers import write


@pytest.fixture
def eng(engine: Any) -> Any:
    engine.agents.create("ada")
    engine.agents.create("bob")
    d = engine.agent_dir(engine.agents.get("ada"))
    write(d, "MEMORY.md", "# Facts\n\nThe printer on floor two is named Gutenberg.\n")
    write(d, "users/u1/memory/2026-01-01.md", "u1 secret: the vault code is 4711 Gutenberg.\n")
    write(d, "users/u2/memory/2026-01-01.md", "u2 secret: the boat is called Gutenberg.\n")
    write(engine.agent_dir(engine.agents.get("bob")), "MEMORY.md", "bob knows the Gutenberg printer too.\n")
    engine.memory.index()
    return engine


def test_schemas_export_without_scope_keys(eng: Any) -> None:
    tools = eng.tools
    names = tools.names(ToolContext(agent="ada", user="u1"))
    assert {"memory_search", "memory_get", "skill_search", "use_skill", "read_context_file"} <= set(names)
    # a tool that needs a user is not offered in an agent-level context
    assert "write_context_file" in names
    assert "write_context_file" not in tools.names(ToolContext(agent="ada"))
    for fmt, key in (("openai", None), ("anthropic", "input_schema"), ("mcp", "inputSchema")):
        for decl in tools.schemas(fmt, ToolContext(agent="ada", user="u1")):
            schema = decl["function"]["parameters"] if key is None else decl[key]
            assert schema["type"] == "object" and schema["additionalProperties"] is False
            assert not {"agent", "user", "session", "channel"} & set(schema["properties"]), decl
            assert not {"agent", "user"} & set(schema.get("required", []))
    openai = {d["function"]["name"]: d for d in tools.openai()}
    assert openai["memory_search"]["type"] == "function"
    assert openai["memory_search"]["function"]["parameters"]["required"] == ["query"]


def test_model_cannot_set_the_scope(eng: Any) -> None:
    ctx = ToolContext(agent="ada", user="u1")
    for bad in ({"query": "Gutenberg", "agent": "bob"}, {"query": "Gutenberg", "user": "u2"}):
        res = eng.tools.call("memory_search", bad, ctx)
        assert res.is_error and "cannot be set by the model" in res.text
    res = eng.tools.call("memory_search", {"query": "x", "scope": "all"}, ctx)
    assert res.is_error and "unknown argument(s) scope" in res.text
    res = eng.tools.call("memory_search", {}, ctx)
    assert res.is_error and "'query' is a required property" in res.text
    res = eng.tools.call("memory_search", {"query": "x", "limit": "9"}, ctx)
    assert res.is_error and "limit" in res.text
    res = eng.tools.call("memory_search", '{"query": ', ctx)
    assert res.is_error and "not valid JSON" in res.text
    res = eng.tools.call("no_such_tool", {}, ctx)
    assert res.is_error and "unknown tool 'no_such_tool'" in res.text
    with pytest.raises(ValidationError):
        eng.tools.call("memory_search", {"agent": "bob", "query": "x"}, ctx, raise_errors=True)
    # the adapted older tools are guarded the same way
    res = eng.tools.call("read_context_file", {"name": "SOUL.md", "agent": "bob"}, ctx)
    assert res.is_error and "agent cannot be set" in res.text
    with pytest.raises(ValidationError):
        ToolContext(agent="")


def test_one_result_shape_for_every_tool(eng: Any) -> None:
    ctx = ToolContext(agent="ada", user="u1")
    calls = {
        "memory_search": {"query": "printer"},
        "memory_get": {"path": "MEMORY.md"},
        "skill_search": {"query": "anything"},
        "write_context_file": {"name": "USER.md", "content": "- **Name:** U1\n"},
        "read_context_file": {"name": "USER.md"},
    }
    for name, args in calls.items():
        res = eng.tools.call(name, args, ctx)
        assert isinstance(res, ToolResult) and isinstance(res.text, str), name
        assert not res.is_error, (name, res.text)
        assert res.data is not None and set(res.as_json()) == {"text", "data", "is_error"}
    assert eng.files.get("ada", "USER.md", user="u1") == "- **Name:** U1\n"


def test_hit_ids_round_trip_and_never_cross_scopes(eng: Any) -> None:
    u1 = ToolContext(agent="ada", user="u1")
    res = eng.tools.call("memory_search", {"query": "Gutenberg vault"}, u1)
    hits = res.data["hits"]
    assert {h["path"] for h in hits} == {"MEMORY.md", "users/u1/memory/2026-01-01.md"}
    assert all(h["id"] in res.text for h in hits)
    again = eng.tools.call("memory_search", {"query": "Gutenberg vault"}, u1).data["hits"]
    assert [h["id"] for h in again] == [h["id"] for h in hits]  # stable
    mine = next(h for h in hits if h["scope"] == "user")
    got = eng.tools.call("memory_get", {"id": mine["id"]}, u1)
    assert not got.is_error and "vault code is 4711" in got.data["text"]
    shared = next(h for h in hits if h["scope"] == "agent")
    # another user of the same agent: the agent-level id works, u1's id is refused
    u2 = ToolContext(agent="ada", user="u2")
    assert not eng.tools.call("memory_get", {"id": shared["id"]}, u2).is_error
    refused = eng.tools.call("memory_get", {"id": mine["id"]}, u2)
    assert refused.is_error and "belongs to another agent or user" in refused.text
    # The secret's words are not in the refusal (not "4711" alone: the id's hex hash can hold it).
    assert "vault code" not in refused.text and "Gutenberg" not in refused.text
    # a forged id: u1's tag with u2's path is refused before any read
    forged = mine["id"].replace("users/u1/", "users/u2/")
    res = eng.tools.call("memory_get", {"id": forged}, u1)
    assert res.is_error and "boat" not in res.text
    # the agent level alone cannot use a user's id; another agent cannot use ada's ids
    assert eng.tools.call("memory_get", {"id": mine["id"]}, ToolContext(agent="ada")).is_error
    res = eng.tools.call("memory_get", {"id": shared["id"]}, ToolContext(agent="bob"))
    assert res.is_error and "belongs to another agent or user" in res.text
    # paths of another user's files are refused too
    res = eng.tools.call("memory_get", {"path": "users/u2/memory/2026-01-01.md"}, u1)
    assert res.is_error and "boat" not in res.text
    # an id that is not a memory id goes to memory_expand, which finds nothing of this scope
    res = eng.tools.call("memory_get", {"id": "not-an-id"}, u1)
    assert res.is_error
    res = eng.tools.call("memory_get", {"id": mine["id"], "path": "MEMORY.md"}, u1)
    assert res.is_error and "either id" in res.text


def test_validate_arguments_unit() -> None:
    schema = model_schema(
        {
            "type": "object",
            "properties": {"agent": {"type": "string"}, "q": {"type": "string"}},
            "required": ["agent", "q"],
        }
    )
    assert schema == {
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
        "additionalProperties": False,
    }
    assert validate_arguments("t", schema, {"q": "x"}) == {"q": "x"}
    assert validate_arguments("t", schema, '{"q": "y"}') == {"q": "y"}
    with pytest.raises(ValidationError, match="arguments must be a JSON object"):
        validate_arguments("t", schema, [1])


def test_episodic_ids_in_hits_and_memory_context_expand(make_engine: Any) -> None:
    """The ids memory_search and the Memory Context show are accepted by memory_expand and
    memory_get, in the user's scope only."""
    import re

    from goclaw.contracts.hooks import PromptRequest
    from goclaw.events import WorkerRunner
    from tests.consolidation_helpers import end_session, record_session

    eng = make_engine()
    agent = eng.agents.create("ada")
    talk = [("user", "Alice Smith will lead Project Atlas from Berlin."), ("assistant", "Noted.")]
    record_session(eng, agent, "s1", "u1", talk)
    end_session(eng, agent, "s1", "u1")
    WorkerRunner(eng).run_once()
    u1, u2 = ToolContext(agent="ada", user="u1"), ToolContext(agent="ada", user="u2")
    hits = eng.tools.call("memory_search", {"query": "Project Atlas Alice"}, u1).data["hits"]
    episodic = [h for h in hits if h["tier"] == "episodic"]
    assert episodic
    expanded = eng.tools.call("memory_expand", {"id": episodic[0]["id"]}, u1)
    assert not expanded.is_error and "Atlas" in expanded.data["episode"]["summary"]
    assert not eng.tools.call("memory_get", {"id": episodic[0]["id"]}, u1).is_error
    assert eng.tools.call("memory_expand", {"id": episodic[0]["id"]}, u2).is_error
    prompt = eng.prompt.build(
        PromptRequest(agent="ada", user="u1", message="Who leads Project Atlas?")
    ).prompt
    shown = re.findall(r"memory_expand id: ([0-9a-f]+)\)", prompt)
    assert shown and shown[0] == episodic[0]["id"]
    assert not eng.tools.call("memory_expand", {"id": shown[0]}, u1).is_error
