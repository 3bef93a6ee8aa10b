"""The hooks of the prompt plugin: other plugins contribute to the system prompt through these.

``goclaw.prompt`` declares them in its manifest (``HOOKSPECS``), so they exist whenever goclaw
is installed and a plugin implements them like any goclaw hook, with the ``goclaw.hookimpl``
marker. The prompt builder calls them through the helpers at the end (the kernel's generic
``host.hooks`` calls: sorted, clashes named, a third party's failure reported and skipped).
The values they exchange are in :mod:`goclaw.contracts.hooks` and :mod:`goclaw.contracts.host`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from goclaw.contracts.hooks import ContextFile, PromptMode, PromptRequest
    from goclaw.contracts.host import ContextFileSource, Host, PromptContext, PromptSection, SlashCommand

hookspec = pluggy.HookspecMarker("goclaw")  # goclaw's project name: these are goclaw hooks

HOOK_NAMES = (
    "goclaw_prompt_sections",
    "goclaw_prompt_modes",
    "goclaw_resolve_prompt_mode",
    "goclaw_context_file_sources",
    "goclaw_virtual_context_files",
    "goclaw_slash_commands",
)


@hookspec
def goclaw_prompt_sections() -> list[PromptSection] | None:
    """Contribute sections of the system prompt.

    Returns: objects with ``name``, ``order`` (float: Identity 1, Bootstrap override 1.5, ...),
    ``modes`` (frozenset of mode names) and ``render(ctx) -> str | None``.
    Semantics: all collected, sorted by ``(order, name)``; a duplicate name is an error.
    Default plugins: one per section, ``goclaw.section.<name>`` (Identity, Bootstrap
    override, Tooling, Safety, Workspace, Sandbox, User Identity, Current Time, Messaging,
    Extra Context, Project Context, Silent Replies, Sub-Agent Spawning, Runtime),
    ``goclaw.skills`` (Skills),
    ``goclaw.memory`` (Memory Recall), ``goclaw.episodic`` (Memory Context).
    """


@hookspec
def goclaw_prompt_modes() -> list[PromptMode] | None:
    """Register prompt modes (``full``, ``task``, ``minimal``, or more).

    Semantics: all collected; a duplicate mode name is an error.
    Default plugin: ``goclaw.prompt``.
    """


@hookspec(firstresult=True)
def goclaw_resolve_prompt_mode(request: PromptRequest) -> str | None:
    """Pick the prompt mode for a request that did not name one, or whose session key is a
    subagent or cron key (that answer beats an explicit mode).

    Semantics: first non-None answer wins. Default plugin: ``goclaw.prompt`` (trylast):
    ``agent:<id>:subagent:...``, ``agent:<id>:cron:...`` and ``agent:<id>:heartbeat...`` keys →
    ``minimal``, else ``full``.
    """


@hookspec
def goclaw_context_file_sources() -> list[ContextFileSource] | None:
    """Contribute sources of context files (AGENTS.md, SOUL.md, ...).

    Returns: objects with ``name``, ``order`` and ``load(ctx) -> list[ContextFile]``.
    Semantics: all collected and loaded in ``(order, name)`` order; a later source's file
    overrides an earlier one of the same name, files only in earlier sources survive.
    Default plugin: ``goclaw.context_files`` (agent-level then per-user database files).
    """


@hookspec
def goclaw_virtual_context_files(ctx: PromptContext) -> list[ContextFile] | None:
    """Contribute system-injected files, rendered in ``<system_context>`` (never stored).

    Semantics: all collected; not called while BOOTSTRAP.md is pending.
    Default plugins: ``goclaw.virtual.delegation`` (DELEGATION.md), ``goclaw.virtual.team``
    (TEAM.md), ``goclaw.virtual.availability`` (AVAILABILITY.md).
    """


@hookspec
def goclaw_slash_commands() -> list[SlashCommand] | None:
    """Contribute slash commands (a message starting with ``/``, handled before the prompt
    is rendered).

    Returns: objects with ``name``, ``order`` and ``handle(text, ctx) -> SlashResult | None``.
    Semantics: all collected, tried in ``(order, name)`` order; the first that returns a
    result handles the message. Default plugin: ``goclaw.slash_commands`` (``/<slug>``, ``/use``,
    ``/list-skills``, ``/help``).
    """


# --------------------------------------------------------------------------- the builder's calls


def sections(host: Host) -> list[PromptSection]:
    """Every plugin's prompt sections, sorted by ``(order, name)``."""
    return host.hooks.items("goclaw_prompt_sections", "prompt section", lambda s: (s.order, s.name))


def modes(host: Host) -> dict[str, PromptMode]:
    """The registered prompt modes by name."""
    return {m.name: m for m in host.hooks.items("goclaw_prompt_modes", "prompt mode")}


def resolve_mode(host: Host, request: PromptRequest) -> str | None:
    """The first plugin's answer to ``goclaw_resolve_prompt_mode``."""
    mode: str | None = host.hooks.first("goclaw_resolve_prompt_mode", request=request)
    return mode


def context_file_sources(host: Host) -> list[ContextFileSource]:
    """Every plugin's context-file sources, sorted by ``(order, name)``."""
    return host.hooks.items("goclaw_context_file_sources", "context-file source", lambda s: (s.order, s.name))


def virtual_context_files(host: Host, ctx: PromptContext) -> list[ContextFile]:
    """Every plugin's virtual files for this build, in call order."""
    found = host.hooks.call("goclaw_virtual_context_files", ctx=ctx)
    return [f for _plugin, files in found for f in files]


def slash_commands(host: Host) -> list[SlashCommand]:
    """Every plugin's slash commands, sorted by ``(order, name)``."""
    return host.hooks.items("goclaw_slash_commands", "slash command", lambda c: (c.order, c.name))
