"""The plain value types hooks pass and return: requests, files, modes, slash results, hits.

Plugins return these (or any object with the same attributes). They are deliberately small;
behaviour lives in the plugins that produce and consume them. The protocols that hold or receive
the host — :class:`~goclaw.contracts.host.PromptContext`, ``PromptSection``,
``ContextFileSource``, ``SlashCommand``, ``SkillTier`` and the ``Factory`` of the provider
registries — are in :mod:`goclaw.contracts.host`, beside :class:`~goclaw.contracts.host.Host`
(the host's hooks return them, and they hold the host: one module keeps that circle inside
itself). Event workers are in :mod:`goclaw.contracts.events`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = [
    "ContextFile",
    "McpPrompt",
    "PromptMode",
    "PromptRequest",
    "SearchHit",
    "SlashResult",
    "Tool",
    "ToolInfo",
]

# --------------------------------------------------------------------------- prompt


@dataclass(frozen=True)
class ToolInfo:
    """A tool the runtime offers the model this turn (rendered by the Tooling section)."""

    name: str
    description: str = ""


@dataclass(frozen=True)
class PromptRequest:
    """What a runtime knows when it asks for a system prompt.

    ``mode=None`` lets the engine pick: ``minimal`` for subagent, cron and heartbeat session
    keys (even when ``mode`` names another one), else ``full``; ``task`` is only asked for.
    """

    agent: str
    user: str | None = None
    mode: str | None = None
    session_key: str | None = None
    message: str | None = None
    tools: tuple[ToolInfo, ...] = ()
    channel: str | None = None
    sandbox: bool = False
    extra_prompt: str | None = None
    # Per-request skill filter: None = use the agent's allow list.
    skill_filter: tuple[str, ...] | None = None
    now: datetime | None = None


@dataclass
class ContextFile:
    """One context file as it enters the prompt (after merging, before truncation)."""

    name: str
    content: str
    source: str = "agent"  # agent | user | virtual | <plugin-defined>
    virtual: bool = False  # virtual files render in <system_context>, not <context_file>


@dataclass(frozen=True)
class PromptMode:
    """A prompt mode. ``file_allowlist`` limits which context files load (None = all)."""

    name: str
    description: str = ""
    file_allowlist: frozenset[str] | None = None


@dataclass(frozen=True)
class McpPrompt:
    """A prompt ``goclaw mcp`` offers (hook ``goclaw_mcp_prompts``) and, with a ``uri``, the same
    text as a Markdown resource. ``render(context, arguments)`` returns the text for the server's
    scope (a :class:`~goclaw.contracts.tools.ToolContext`) and the client's arguments
    (``arguments``: ``(name, description)`` pairs, all optional). ``description`` may name the
    server's agent as ``{agent}``; ``title`` names the text in the result and the resource."""

    name: str
    title: str
    description: str
    render: Callable[[Any, Mapping[str, str]], str]
    arguments: tuple[tuple[str, str], ...] = ()
    uri: str | None = None


# --------------------------------------------------------------------------- slash commands


@dataclass
class SlashResult:
    """What a slash command did to this turn.

    ``skill`` narrows the turn to one skill whose full SKILL.md is injected; ``reply`` is a
    direct answer (``/list-skills``, ``/help``); ``message`` replaces the user message.
    """

    command: str
    skill: str | None = None
    message: str | None = None
    reply: str | None = None
    suggestions: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- search


@dataclass
class SearchHit:
    """One search result, shared by memory and skill search backends."""

    id: Any
    score: float
    text: str = ""
    path: str = ""
    start_line: int = 0
    end_line: int = 0
    scope: str = "agent"  # agent | user
    tier: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- tools


@dataclass(frozen=True)
class Tool:
    """A tool a runtime can hand to its model (``skill_search``, ``memory_search``, ...)."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    func: Callable[..., Any]
