"""The contracts are true: each built-in service satisfies its Protocol member
by member, every ``goclaw_services`` name is documented and reachable, providers call tools."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from goclaw import hookimpl, hookspecs
from goclaw.contracts.events import PAYLOADS, RUN_COMPLETED, EventPublisher
from goclaw.contracts.providers import ChatMessage, LLMProvider, ToolCall, ToolCallingLLMProvider, chat
from goclaw.contracts.services import SERVICES
from goclaw.engine import Engine
from goclaw.plugins import discover


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    ws = tmp_path_factory.mktemp("contracts")
    with Engine.open(ws) as eng:
        yield eng


def _members(protocol: type) -> dict[str, Any]:
    skip = {"__init__", "__subclasshook__", "__class_getitem__", "__init_subclass__"}
    out: dict[str, Any] = {}
    for klass in reversed(protocol.__mro__):
        if klass is object or not getattr(klass, "_is_protocol", False):
            continue
        for name, value in vars(klass).items():
            if not name.startswith("_") and name not in skip:
                out[name] = value
        for name in getattr(klass, "__annotations__", {}):
            if not name.startswith("_"):
                out.setdefault(name, None)
    return out


def _shape(fn: Any) -> list[tuple[str, Any, Any]]:
    params = list(inspect.signature(fn).parameters.values())[1:]  # drop self
    return [(p.name, p.kind, p.default) for p in params]


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_builtin_service_satisfies_its_protocol(engine: Engine, name: str) -> None:
    protocol, _owner = SERVICES[name]
    service = engine.service(name)
    assert isinstance(service, protocol), f"{type(service).__name__} is not a {protocol.__name__}"
    for member, declared in _members(protocol).items():
        assert hasattr(type(service), member) or hasattr(service, member), f"{name}.{member} missing"
        if inspect.isfunction(declared):
            actual = getattr(type(service), member)
            assert _shape(actual) == _shape(declared), (
                f"{name}.{member}: {_shape(actual)} != {_shape(declared)}"
            )


def test_every_registered_service_is_documented_and_reachable(engine: Engine) -> None:
    registered = set(engine._services) | {"events"}
    assert registered == set(SERVICES), registered ^ set(SERVICES)
    doc = hookspecs.goclaw_services.__doc__ or ""
    for name in SERVICES:
        assert getattr(engine, name) is engine.service(name)
        assert f"{name}" in doc, f"goclaw_services does not document {name!r}"


@pytest.mark.parametrize(
    "owner",
    sorted({o for _, o in SERVICES.values() if o != "kernel"} - {"goclaw.context_files", "goclaw.prompt"}),
)
def test_disabling_the_owner_removes_exactly_its_services(workspace: Path, owner: str) -> None:
    names = {n for n, (_, o) in SERVICES.items() if o == owner}
    assert set(discover().plugins[owner].declares("SERVICES")) == names  # its manifest says so
    with Engine.open(workspace, plugins={"disable": [owner]}) as engine:
        for name in SERVICES:
            assert engine.has_service(name) == (name not in names), name
        assert isinstance(engine.events, EventPublisher)


def test_payload_types_name_the_fields_publishers_send(workspace: Path) -> None:
    with Engine.open(workspace) as engine:
        engine.agents.create("ada")
        engine.sessions.append("ada", "k", "user", "hello")
        engine.sessions.end("k")
        [row] = engine.events.deliveries(worker="episodic")
    assert row["event_type"] == RUN_COMPLETED
    assert set(row["payload"]) == set(PAYLOADS[RUN_COMPLETED].__annotations__)


# --------------------------------------------------------------------------- providers


class _TextOnly:
    name = "text-only"

    def complete(
        self, messages: Sequence[Mapping[str, Any]], *, timeout: float = 60.0, **options: Any
    ) -> str:
        return "plain answer"


def test_chat_through_a_text_only_provider() -> None:
    provider = _TextOnly()
    assert isinstance(provider, LLMProvider) and not isinstance(provider, ToolCallingLLMProvider)
    message = chat(provider, [{"role": "user", "content": "hi"}], tools=[{"type": "function"}])
    assert message == ChatMessage("assistant", "plain answer")


def test_litellm_provider_returns_tool_calls(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Engine.open(workspace, plugins={"llm": {"model": "gpt-4o-mini"}}) as engine:
        provider = engine.llm()
        assert isinstance(provider, ToolCallingLLMProvider)
        from goclaw_llm.plugin import import_litellm

        litellm = import_litellm()
        real = litellm.completion
        seen: dict[str, Any] = {}

        def fake(**kwargs: Any) -> Any:
            seen.update(kwargs)
            calls = [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "append_file", "arguments": json.dumps({"path": "memory/x.md"})},
                }
            ]
            return real(**kwargs, mock_tool_calls=calls)

        monkeypatch.setattr(litellm, "completion", fake)
        schema = {
            "type": "function",
            "function": {"name": "append_file", "description": "d", "parameters": {"type": "object"}},
        }
        message = chat(provider, [{"role": "user", "content": "save it"}], tools=[schema])
    assert seen["tools"] == [schema]
    assert message.role == "assistant"
    assert message.tool_calls == (ToolCall("call_1", "append_file", '{"path": "memory/x.md"}'),)
    assert message.tool_calls[0].parsed_arguments() == {"path": "memory/x.md"}
    assert message.as_dict()["tool_calls"][0]["function"]["name"] == "append_file"


def test_memory_writer_satisfies_its_protocol(engine: Engine) -> None:
    from goclaw.contracts.memory import MemoryFileWriter

    writer = engine.memory.writer
    assert isinstance(writer, MemoryFileWriter)
    for member, declared in _members(MemoryFileWriter).items():
        assert _shape(getattr(type(writer), member)) == _shape(declared), member


class _ScriptedToolCaller:
    """A from-scratch tool-calling provider (no litellm): writes one memory, then stops."""

    name = "scripted"

    def __init__(self) -> None:
        self.turns: list[list[dict[str, Any]]] = []
        self.tools_seen: list[str] = []

    def complete(
        self, messages: Sequence[Mapping[str, Any]], *, timeout: float = 60.0, **options: Any
    ) -> str:
        raise AssertionError("the flush must use chat() when the provider has it")

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        timeout: float = 60.0,
        **options: Any,
    ) -> ChatMessage:
        self.turns.append([dict(m) for m in messages])
        self.tools_seen = [t["function"]["name"] for t in tools]
        if len(self.turns) == 1:
            args = json.dumps({"path": "memory/2026-01-02.md", "content": "- Deadline: 2026-03-01\n"})
            return ChatMessage("assistant", "", (ToolCall("c1", "append_file", args),))
        return ChatMessage("assistant", "Saved.")


class _ScriptedPlugin:
    def __init__(self, provider: _ScriptedToolCaller) -> None:
        self.provider = provider

    @hookimpl
    def goclaw_llm_providers(self) -> dict[str, Any]:
        return {"scripted": lambda engine: self.provider}


def test_flush_tool_loop_runs_through_any_tool_calling_provider(workspace: Path) -> None:
    provider = _ScriptedToolCaller()
    with Engine.open(
        workspace,
        plugins={"llm": {"provider": "scripted"}},
        extra_plugins=[("scripted", _ScriptedPlugin(provider))],
    ) as engine:
        agent = engine.agents.create("ada")
        engine.sessions.append("ada", "k", "user", "The deadline is 2026-03-01, remember it.")
        result = engine.sessions.flush("k")
        memory_file = engine.agent_dir(agent) / "memory" / "2026-01-02.md"
        assert result is not None and result.method == "llm", result
        assert memory_file.read_text().strip().endswith("- Deadline: 2026-03-01")
    assert "append_file" in provider.tools_seen
    assert len(provider.turns) == 2
    assert provider.turns[1][-1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": provider.turns[1][-1]["content"],
    }
    assert provider.turns[1][-2]["tool_calls"][0]["function"]["name"] == "append_file"
