"""``engine.tools``: the runtime's tools under the tool calling contract.

    tools = engine.tools
    ctx = ToolContext(agent="ada", user="u1", session="s-42")
    tools.schemas("openai", ctx)          # declarations for the model
    result = tools.call("memory_search", {"query": "deadline"}, ctx)
    result.text, result.data              # for the model, for the runtime

Tools come from the ``goclaw_tools`` hook. A plugin may contribute tools that implement
:class:`~goclaw.contracts.tools.ContractTool` (``run(args, context)``) or older
:class:`~goclaw.contracts.hooks.Tool` values whose ``func`` takes the model's arguments plus the caller as
keywords; the registry adapts the latter: the scope keys are taken out of the model's schema and
filled from the :class:`ToolContext`, so the model can neither see nor set them.
"""

from __future__ import annotations

import builtins
import inspect
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from goclaw.contracts.tools import (
    CONTEXT_KEYS,
    ContractTool,
    ToolContext,
    ToolResult,
    check_tool_name,
    export_schema,
    model_schema,
    validate_arguments,
)
from goclaw.errors import GoclawError, NotFoundError

if TYPE_CHECKING:
    from goclaw.contracts.hooks import Tool
    from goclaw.contracts.host import Host

FORMATS = ("openai", "anthropic", "mcp")


@dataclass(frozen=True)
class KeywordTool:
    """Adapts a :class:`~goclaw.contracts.hooks.Tool` (``func(**args, agent=, user=)``) to the contract."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    func: Any
    accepts: frozenset[str]
    needs_user: bool

    @classmethod
    def wrap(cls, tool: Tool) -> KeywordTool:
        try:
            sig = inspect.signature(tool.func)
            params = sig.parameters
            if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
                accepts = CONTEXT_KEYS
            else:
                accepts = frozenset(k for k in params if k in CONTEXT_KEYS)
            user_param = params.get("user")
            needs_user = user_param is not None and user_param.default is inspect.Parameter.empty
        except (TypeError, ValueError):
            accepts, needs_user = frozenset({"agent", "user"}), False
        return cls(tool.name, tool.description, model_schema(tool.parameters), tool.func, accepts, needs_user)

    def run(self, args: Mapping[str, Any], context: ToolContext) -> ToolResult:
        scope: dict[str, Any] = {
            "agent": context.agent,
            "user": context.user,
            "session": context.session,
            "session_key": context.session,
            "channel": context.channel,
            "skill_filter": context.skill_filter,
        }
        kwargs = dict(args)
        kwargs.update({k: v for k, v in scope.items() if k in self.accepts})
        return ToolResult.of(self.func(**kwargs))


class ToolRegistry:
    """The tools offered to a model; one per engine (``engine.tools``)."""

    def __init__(self, engine: Host) -> None:
        self.engine = engine
        self._tools: dict[str, ContractTool] | None = None
        self._lock = threading.Lock()

    def _load(self) -> dict[str, ContractTool]:
        if self._tools is None:
            with self._lock:
                if self._tools is None:
                    found: dict[str, ContractTool] = {}
                    for tool in self.engine.hooks.tools(self.engine):
                        check_tool_name(tool.name)
                        adapted: Any = (
                            tool if callable(getattr(tool, "run", None)) else KeywordTool.wrap(tool)
                        )
                        found[tool.name] = adapted
                    self._tools = found
        return self._tools

    def names(self, context: ToolContext | None = None) -> builtins.list[str]:
        return [t.name for t in self.list(context)]

    def list(self, context: ToolContext | None = None) -> builtins.list[ContractTool]:
        """The tools, sorted by name; with a context, only those usable in it (a tool that
        needs a user is left out of an agent-level context)."""
        tools = sorted(self._load().values(), key=lambda t: t.name)
        if context is None or context.user:
            return tools
        return [t for t in tools if not getattr(t, "needs_user", False)]

    def get(self, name: str) -> ContractTool:
        try:
            return self._load()[name]
        except KeyError:
            known = ", ".join(sorted(self._load())) or "none"
            raise NotFoundError(f"unknown tool {name!r}; available: {known}") from None

    def schemas(
        self, fmt: str = "openai", context: ToolContext | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Every tool's declaration in ``fmt`` (``openai``, ``anthropic`` or ``mcp``)."""
        return [export_schema(t, fmt) for t in self.list(context)]

    def openai(self, context: ToolContext | None = None) -> builtins.list[dict[str, Any]]:
        return self.schemas("openai", context)

    def anthropic(self, context: ToolContext | None = None) -> builtins.list[dict[str, Any]]:
        return self.schemas("anthropic", context)

    def mcp(self, context: ToolContext | None = None) -> builtins.list[dict[str, Any]]:
        return self.schemas("mcp", context)

    def call(
        self,
        name: str,
        args: Mapping[str, Any] | str | None,
        context: ToolContext,
        *,
        raise_errors: bool = False,
    ) -> ToolResult:
        """Run one tool for ``context`` with the model's ``args`` (a dict or a JSON string).

        Unknown tools, arguments that break the schema (including any attempt to set
        ``agent``/``user``), and every error a user or model can cause come back as a
        :class:`ToolResult` with ``is_error=True`` (or raise with ``raise_errors=True``).
        """
        if not isinstance(context, ToolContext):
            raise TypeError("context must be a goclaw.contracts.tools.ToolContext")
        try:
            tool = self.get(name)
            if getattr(tool, "needs_user", False) and not context.user:
                raise GoclawError(f"{name} needs a user in the tool context")
            checked = validate_arguments(name, model_schema(tool.parameters), args)
            return tool.run(checked, context)
        except GoclawError as exc:
            if raise_errors:
                raise
            return ToolResult.error(exc)


__all__ = ["FORMATS", "KeywordTool", "ToolContext", "ToolRegistry", "ToolResult"]
