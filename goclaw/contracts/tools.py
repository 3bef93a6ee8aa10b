"""The tool calling contract: scope set by the runtime, arguments by the model.

A runtime hands its model tools (``memory_search``, ``use_skill``, ...). Two namespaces meet
in a tool call and must never mix:

* :class:`ToolContext` — who is calling (agent, user, session, channel). The *runtime* sets it
  from its own state; nothing the model sends can change it.
* the model's arguments — validated against the tool's JSON schema (:func:`validate_arguments`);
  a missing, mistyped or unknown argument (including ``agent`` or ``user``) is refused with a
  one-line :class:`ToolArgumentError`.

Every tool answers with one shape, :class:`ToolResult`: ``text`` for the model plus
``data``, the same answer as structured JSON for the runtime. Errors a user or a model can cause
come back as a result with ``is_error=True`` (the runtime passes the text back to the model).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from goclaw.errors import ValidationError

# Keyword names a tool function receives from the runtime, never from the model.
CONTEXT_KEYS = frozenset({"agent", "user", "session", "session_key", "channel", "skill_filter"})
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
_USER_ID = re.compile(r"(?![.\s])[^/\\]{1,255}(?<!\s)")  # no '/', '\', leading '.', surrounding space


class ToolArgumentError(ValidationError):
    """The model's arguments do not match the tool's schema (or try to set the scope)."""


def check_user_id(user: str) -> str:
    """``user`` if valid, else a one-line :class:`ValidationError`: 1-255 printable characters,
    no surrounding space, no '/' or '\\', no leading '.' (user ids name folders under ``users/``)."""
    if not (isinstance(user, str) and user.isprintable() and _USER_ID.fullmatch(user)):
        raise ValidationError(f"invalid user id {user!r}: printable, no outer spaces, no '/' or leading '.'")
    return user


@dataclass(frozen=True)
class ToolContext:
    """Who is calling a tool; set by the runtime for the turn, never by the model.

    ``agent`` is required. ``user`` is ``None`` for agent-level calls (cron, admin tools);
    ``session`` is the runtime's session key; ``channel`` the channel the turn came from;
    ``skill_filter`` restricts which skills are visible this turn.
    """

    agent: str
    user: str | None = None
    session: str | None = None
    channel: str | None = None
    skill_filter: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.agent, str) or not self.agent.strip():
            raise ValidationError("a tool context needs an agent")
        if self.user is not None:
            check_user_id(self.user)


@dataclass
class ToolResult:
    """What every tool returns: ``text`` for the model and ``data`` for the runtime."""

    text: str
    data: Any = None
    is_error: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"text": self.text, "data": self.data, "is_error": self.is_error}

    @classmethod
    def of(cls, data: Any) -> ToolResult:
        """A result from whatever a function returned (a string, a dict, a list, a number)."""
        if isinstance(data, ToolResult):
            return data
        if isinstance(data, str):
            try:
                parsed = json.loads(data)
            except ValueError:
                return cls(text=data, data={"text": data})
            return cls(text=data, data=parsed)
        return cls(text=json.dumps(data, ensure_ascii=False, default=str), data=data)

    @classmethod
    def error(cls, exc: BaseException) -> ToolResult:
        message = " ".join(str(exc).split())
        return cls(
            text=f"error: {message}",
            data={"error": {"type": type(exc).__name__, "message": message}},
            is_error=True,
        )


@runtime_checkable
class ContractTool(Protocol):
    """A tool under this contract: a model-facing schema and ``run(args, context)``."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def run(self, args: Mapping[str, Any], context: ToolContext) -> ToolResult: ...


@dataclass(frozen=True)
class FunctionTool:
    """A :class:`ContractTool` made from a function ``handler(args, context) -> ToolResult``.

    ``func`` optionally keeps the older keyword form ``func(**model_args, agent=..., user=...)``
    for existing callers; new code calls ``host.tools.call(name, args, context)``.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: Callable[[Mapping[str, Any], ToolContext], ToolResult]
    func: Callable[..., Any] | None = field(default=None, compare=False)

    def run(self, args: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return self.handler(args, context)


# ---------------------------------------------------------------------- schemas
def model_schema(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The schema the model sees: context keys removed, unknown properties refused."""
    schema: dict[str, Any] = json.loads(json.dumps(dict(parameters) or {"type": "object"}))
    schema.setdefault("type", "object")
    props = {k: v for k, v in (schema.get("properties") or {}).items() if k not in CONTEXT_KEYS}
    schema["properties"] = props
    required = [r for r in schema.pop("required", None) or [] if r not in CONTEXT_KEYS]
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def validate_arguments(tool: str, schema: Mapping[str, Any], args: Any) -> dict[str, Any]:
    """Check the model's ``args`` against ``schema``; returns them as a dict.

    Raises :class:`ToolArgumentError` naming the tool and the first problem. A context key
    (``agent``, ``user``, ...) sent by the model gets its own message: it is the runtime's.
    """
    args = {} if args is None else args
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError as exc:
            raise ToolArgumentError(f"{tool}: arguments are not valid JSON ({exc})") from None
    if not isinstance(args, Mapping):
        raise ToolArgumentError(f"{tool}: arguments must be a JSON object, got {type(args).__name__}")
    scoped = sorted(k for k in args if k in CONTEXT_KEYS)
    if scoped:
        raise ToolArgumentError(
            f"{tool}: {', '.join(scoped)} cannot be set by the model: the runtime sets the "
            "caller's scope (ToolContext)"
        )
    import jsonschema

    validator = jsonschema.Draft202012Validator(dict(schema))
    errors = sorted(validator.iter_errors(dict(args)), key=lambda e: (list(e.path), e.message))
    if errors:
        err = errors[0]
        where = "/".join(str(p) for p in err.absolute_path)
        if err.validator == "additionalProperties":
            known = ", ".join(sorted((schema.get("properties") or {}).keys())) or "none"
            extra = sorted(set(args) - set(schema.get("properties") or {}))
            raise ToolArgumentError(f"{tool}: unknown argument(s) {', '.join(extra)}; expected: {known}")
        raise ToolArgumentError(f"{tool}: invalid argument{(' ' + where) if where else ''}: {err.message}")
    return dict(args)


def export_schema(tool: ContractTool, fmt: str) -> dict[str, Any]:
    """One tool's declaration in a runtime's format: ``openai``, ``anthropic`` or ``mcp``."""
    schema = model_schema(tool.parameters)
    if fmt == "openai":
        return {
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": schema},
        }
    if fmt == "anthropic":
        return {"name": tool.name, "description": tool.description, "input_schema": schema}
    if fmt == "mcp":
        return {"name": tool.name, "description": tool.description, "inputSchema": schema}
    raise ValidationError(f"unknown tool schema format {fmt!r}: use openai, anthropic or mcp")


def check_tool_name(name: str) -> str:
    if not _NAME_RE.match(name or ""):
        raise ValidationError(f"invalid tool name {name!r}: letters, digits, '_' and '-', at most 64")
    return name


__all__ = [
    "CONTEXT_KEYS",
    "ContractTool",
    "FunctionTool",
    "ToolArgumentError",
    "ToolContext",
    "ToolResult",
    "check_tool_name",
    "export_schema",
    "model_schema",
    "validate_arguments",
]
