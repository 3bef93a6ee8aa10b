"""Typed contracts that cross plugin boundaries, at the bottom of goclaw: these modules import
nothing of goclaw but each other and :mod:`goclaw.errors`.

Everything a plugin needs from the kernel or from another plugin is here, so a plugin imports
nothing from goclaw but ``goclaw.hookimpl``, :mod:`goclaw.errors` and these modules, and a third
party can replace a feature by implementing its contract from scratch:

* :mod:`goclaw.contracts.host` — :class:`~goclaw.contracts.host.Host`, what a plugin may ask of
  the engine (its database, agents, hooks, event queue, providers, services, ...), and the
  protocols that hold or receive it (prompt context and sections, context-file sources, slash
  commands, skill tiers, registry factories);
* :mod:`goclaw.contracts.hooks` — the plain values hooks pass and return;
* :mod:`goclaw.contracts.services` — a Protocol per ``goclaw_services`` name (files, prompt,
  skills; the memory family — memory and its file writer, sessions, episodic, KG, channel
  memory — in :mod:`goclaw.contracts.memory`) and ``SERVICES``, the name → Protocol map;
* :mod:`goclaw.contracts.search` — the memory search backend, writes included;
* :mod:`goclaw.contracts.events` — event names and payload types, queued events, workers;
* :mod:`goclaw.contracts.providers` — embedding and LLM providers, with tool calling, and the
  helpers that degrade gracefully without one (``embed_texts``, ``llm_complete``);
* :mod:`goclaw.contracts.store` — the kernel's tables plugins share (agents, context files,
  ``system_configs``, the embedding cache, ``worker_state``) and the ``host.db`` handle;
* :mod:`goclaw.contracts.columns` — column types and field helpers for a plugin's own tables;
* :mod:`goclaw.contracts.schema` — a plugin's tables and migration chain, and its erasure steps;
* :mod:`goclaw.contracts.agents` — resolving agents, the tenant rule, user scope, overrides;
* :mod:`goclaw.contracts.files` — context-file names, order and cache invalidation;
* :mod:`goclaw.contracts.records` — the JSON shapes of KG and episodic records;
* :mod:`goclaw.contracts.tools` — the tool-calling contract (``ToolContext``, ``ToolResult``);
* :mod:`goclaw.contracts.commands` and :mod:`goclaw.contracts.cli` — declaring ``goclaw``
  commands, and what a command needs to run (its host, options, JSON and table output);
* :mod:`goclaw.contracts.fsutil` — atomic file writes.

Import the submodule you need; this package imports nothing at import time.
"""
