"""The kernel's extension points, as pluggy hook specifications: the hooks the kernel calls.

Plugin authors implement these with the ``goclaw.hookimpl`` marker. A plugin declares the hooks
it calls itself in a module of its own (named by its manifest's ``HOOKSPECS``, or added through
``goclaw_add_hookspecs``): the prompt's sections, modes, context-file sources, virtual files and
slash commands (``goclaw_prompt.hookspecs``), the skill tiers (``goclaw_skills.hookspecs``), the
memory search backends and search extensions (``goclaw_memory.hookspecs``), the HTTP API's
endpoints (``goclaw_http.hookspecs``) and the MCP server's prompts (``goclaw_mcp.hookspecs``).
Conventions:

* every hook is called with keyword arguments; implementations may accept any subset;
* "everyone contributes" hooks return a list (or ``None``) and are all collected; the kernel
  sorts the combined result by an explicit key (``order``/``priority`` then name), so output
  never depends on registration order;
* registry hooks (embedding providers, LLM providers, tokenizers) return
  ``{name: factory}``; a name claimed by two plugins is an error naming both;
* ``firstresult`` hooks stop at the first non-``None`` answer; the default implementation is
  ``trylast`` so a third-party plugin wins without disabling anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import click
    from pydantic import BaseModel

    from goclaw.contracts.commands import CommandSpec
    from goclaw.contracts.events import ConsolidationWorker
    from goclaw.contracts.hooks import Tool
    from goclaw.contracts.host import Factory, Host
    from goclaw.contracts.schema import ForgetScope, ForgetStep, SchemaComponent
    from goclaw.contracts.store import Agent

NAME = "goclaw"
hookspec = pluggy.HookspecMarker(NAME)
hookimpl = pluggy.HookimplMarker(NAME)


# --------------------------------------------------------------------------- configuration


@hookspec(historic=True)
def goclaw_add_hookspecs(plugin_manager: pluggy.PluginManager) -> None:
    """Add hook specifications of this plugin's own (``plugin_manager.add_hookspecs(module)``),
    for other plugins to implement; the plugin calls them through ``engine.hooks`` (its generic
    ``call``, ``first``, ``items`` and ``registry``).

    Semantics: historic: called when the plugin is registered, before any later plugin is,
    so a plugin registered after it can implement the new hooks. A hook added so does not exist
    while its plugin is disabled: an implementation of it should then be marked
    ``@hookimpl(optionalhook=True)``, else its plugin is reported as failed (unknown hook). A
    plugin with a manifest names the module there instead (``HOOKSPECS``, :mod:`goclaw.plugins`):
    its hooks then exist whenever it is installed, enabled or not.
    Default plugin: none; the built-ins declare theirs in their manifests (``goclaw.prompt``,
    ``goclaw.skills``, ``goclaw.memory``, ``goclaw.http``, ``goclaw.mcp``).
    """


@hookspec
def goclaw_settings_model() -> type[BaseModel] | None:
    """Declare the pydantic model that validates this plugin's ``[plugins.<feature>]`` table.

    Returns: a ``pydantic.BaseModel`` subclass whose defaults are the spec's values, or None.
    Semantics: called once per plugin; the kernel knows which plugin answered, and parses the
    table named after the plugin (``goclaw.memory`` → ``[plugins.memory]``; a third-party
    plugin registered as ``hello`` → ``[plugins.hello]``). Read the parsed settings with
    ``engine.plugin_settings("memory")``.
    Default plugin: each built-in that has settings.
    """


# --------------------------------------------------------------------------- engine lifecycle


@hookspec
def goclaw_services(engine: Host) -> dict[str, Any] | None:
    """Contribute named service objects to the :class:`~goclaw.Engine` facade.

    Args: engine — the engine being opened.
    Returns: ``{"skills": SkillsService(engine), ...}``; the engine exposes each as an attribute
    (``engine.skills``). Semantics: all collected; two plugins offering one name is an error.
    Default plugins: ``goclaw.context_files`` (files), ``goclaw.bootstrap`` (seeder,
    summoner), ``goclaw.prompt`` (prompt), ``goclaw.skills`` (skills), ``goclaw.memory``
    (memory, sessions), ``goclaw.episodic`` (episodic), ``goclaw.kg`` (kg),
    ``goclaw.channel_memory`` (channel_memory). ``events`` is the kernel's own
    (:class:`~goclaw.events.EventQueue`); a plugin may not provide it.
    """


@hookspec
def goclaw_startup(engine: Host) -> None:
    """Run start-up work once the engine is open and migrated (e.g. backfill embeddings).

    Semantics: every implementation is called, in pluggy's call order (use ``tryfirst`` /
    ``trylast`` to order); an exception in a third-party implementation is reported and
    skipped unless ``plugins.strict``.
    Default plugins: ``goclaw.skills`` (embedding backfill), ``goclaw.memory``
    (optional watcher).
    """


@hookspec
def goclaw_agent_created(engine: Host, agent: Agent) -> None:
    """React to a new agent. Called after the agent row is committed, outside any transaction.

    Default plugin: ``goclaw.bootstrap`` seeds the agent-level context files.
    """


@hookspec
def goclaw_cli_commands() -> list[CommandSpec] | None:
    """Declare top-level ``goclaw`` commands, lazily: the preferred form.

    Return :class:`goclaw.contracts.commands.CommandSpec` values: the command's name, its one-line
    help and ``"module:attribute"`` of its ``click`` command. ``goclaw --help`` lists them from
    the declaration; the module is imported only when that command runs, so the plugin's command
    code costs nothing until used. Semantics: all collected when the CLI starts; a name the
    kernel or another loaded plugin already uses is an error naming both when the command runs.
    A disabled plugin's name is free, so a replacement feature can ship its own ``goclaw
    memory``. The same declarations may instead sit in the plugin's manifest (``COMMANDS``,
    :mod:`goclaw.plugins`): the CLI then reads them without importing the plugin, and names the
    plugin when it is disabled; a distribution that ships manifests is never imported for its
    commands. Default plugins: none; the built-ins declare theirs in their manifests.
    """


@hookspec
def goclaw_register_commands(cli: click.Group) -> None:
    """Add ready-made commands to the ``goclaw`` CLI (``cli.add_command(...)``): the eager form.

    Semantics: all called when the CLI starts, so the plugin's command module is imported on
    every ``goclaw`` run, ``--help`` included; prefer ``goclaw_cli_commands``, which imports it
    only when the command runs. Kept for compatibility. Default plugin: none.
    """


# --------------------------------------------------------------------------- storage


@hookspec
def goclaw_schema() -> list[SchemaComponent] | None:
    """Declare the tables this plugin owns and the migration chain that creates and upgrades them.

    Returns: :class:`goclaw.contracts.schema.SchemaComponent` objects (component ``name``, the
    SQLModel ``tables``, the ``migrations`` folder of an Alembic chain with one head).
    Semantics: all collected; two plugins declaring one component name is an error. When the
    engine opens, the kernel's chain runs first, then every enabled component's chain in name
    order, in one transaction under one lock; each component's stamp lives in its own version
    table ``goclaw_schema_version_<name>``, and a stamp newer than the chain this goclaw ships is
    refused. A disabled plugin's component is not touched (its tables appear when it is enabled).
    Default plugins: ``goclaw.memory`` (``memory``: memory index and sessions), ``goclaw.skills``
    (``skills``), ``goclaw.episodic`` (``episodic``), ``goclaw.kg`` (``kg``),
    ``goclaw.channel_memory`` (``channel_memory``).
    """


@hookspec
def goclaw_forget_rows(engine: Host, scope: ForgetScope, connection: Any) -> list[ForgetStep] | None:
    """Say which rows of this plugin's tables ``goclaw forget`` erases for ``scope``.

    Args: ``scope`` — :class:`goclaw.contracts.schema.ForgetScope` (a user of some agents, or
    whole agents); ``connection`` — an open SQLAlchemy connection for reads the filters need.
    Returns: :class:`goclaw.contracts.schema.ForgetStep` objects, children first. Semantics: all
    collected, called once before anything is erased; the same filters count the rows (dry run)
    and delete them, in one transaction with the kernel's own tables (deleted last).
    Default plugins: ``goclaw.memory`` (memory index, sessions), ``goclaw.skills`` (grants),
    ``goclaw.episodic``, ``goclaw.kg``, ``goclaw.channel_memory``.
    """


@hookspec
def goclaw_forgotten(engine: Host, scope: ForgetScope) -> None:
    """React to an erasure by ``goclaw forget``: the rows of ``scope`` (and its folders) are
    gone; drop what was derived from them outside those rows (caches, a search index of one's
    own), so no erased text survives.

    Semantics: every implementation is called once, after the erasing transaction committed
    and before the erasure is checked (nothing of ``scope`` may be written again).
    Default plugin: ``goclaw.memory`` (gives each agent's memory index a new version, so every
    process's search backend catches up, and has its own backend drop the erased rows).
    """


# --------------------------------------------------------------------------- registries


@hookspec
def goclaw_embedding_providers() -> dict[str, Factory] | None:
    """Register embedding providers by name; ``factory(engine)`` returns an
    :class:`~goclaw.contracts.providers.EmbeddingProvider` or raises to say it is unavailable.

    Semantics: a registry; selected by ``[plugins.embeddings] provider``.
    Default plugin: ``goclaw.embeddings`` (``static`` offline default, ``litellm``, ``none``).
    """


@hookspec
def goclaw_tokenizers() -> dict[str, Factory] | None:
    """Register tokenizers by name; ``factory(engine)`` returns an object with ``name`` and
    ``count(text) -> int`` (:class:`goclaw.tokenizer.Tokenizer`).

    Semantics: a registry; selected by the top-level ``tokenizer`` setting. A factory that
    raises leaves characters ÷ 4 (``chars``, built in) counting, with a warning.
    Default plugin: ``goclaw.tokens`` (tiktoken's ``o200k_base``, the default, and ``cl100k_base``).
    """


@hookspec
def goclaw_llm_providers() -> dict[str, Factory] | None:
    """Register LLM providers by name; ``factory(engine)`` returns an
    :class:`~goclaw.contracts.providers.LLMProvider` or None when no model is configured. A
    provider that also implements ``chat``
    (:class:`~goclaw.contracts.providers.ToolCallingLLMProvider`: messages and tool schemas in,
    a message with tool calls out) runs the memory flush's tool loop; one with ``complete`` only
    gets a single plain-text flush.

    Semantics: a registry; selected by ``[plugins.llm] provider``.
    Default plugin: ``goclaw.llm`` (``litellm``).
    """


# --------------------------------------------------------------------------- workers and tools


@hookspec
def goclaw_consolidation_workers() -> list[ConsolidationWorker] | None:
    """Contribute consolidation workers subscribed to durable event types.

    Returns: objects with ``name``, ``event_types`` and ``handle(event, engine)``
    (:class:`goclaw.contracts.events.ConsolidationWorker`; event names and payload shapes are in
    :mod:`goclaw.contracts.events`). Semantics: all collected; a duplicate worker name is an
    error. Publishing an event creates one delivery per subscribed worker. The queue is the
    kernel's, so a third-party worker runs whatever built-ins are disabled.
    Default plugins, each in the package of the feature it serves: ``goclaw.workers.episodic``,
    ``.dreaming`` and ``.retention`` (``goclaw_episodic``), ``.semantic`` and ``.dedup``
    (``goclaw_kg``).
    """


@hookspec
def goclaw_tools(engine: Host) -> list[Tool] | None:
    """Contribute runtime tools (``skill_search``, ``use_skill``, ``memory_search``, ...).

    Semantics: all collected; a duplicate tool name is an error.
    Default plugins: ``goclaw.context_files`` (read/write_context_file), ``goclaw.skills``
    (skill_search, use_skill), ``goclaw.memory`` (memory_search, memory_get),
    ``goclaw.episodic`` (memory_expand).
    """


# Names the kernel exposes for the hook reference and the meta-tests.
HOOK_NAMES: tuple[str, ...] = tuple(
    name for name in list(globals()) if name.startswith("goclaw_") and callable(globals()[name])
)
__all__ = ["HOOK_NAMES", "NAME", "hookimpl", "hookspec"]
