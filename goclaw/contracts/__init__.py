"""Typed contracts that cross plugin boundaries (DESIGN.md §3, issue 13 item 1).

Everything one plugin needs from another is here, so no plugin imports another plugin and a
third party can replace a feature by implementing its contract from scratch:

* :mod:`goclaw.contracts.services` — a Protocol per ``goclaw_services`` name (files, prompt,
  skills; the memory family — memory and its file writer, sessions, episodic, KG, channel
  memory — in :mod:`goclaw.contracts.memory`) and ``SERVICES``, the name → Protocol map;
* :mod:`goclaw.contracts.search` — the memory search backend, writes included;
* :mod:`goclaw.contracts.events` — the event queue, event names and payload types, workers;
* :mod:`goclaw.contracts.providers` — embedding and LLM providers, with tool calling;
* :mod:`goclaw.contracts.hooks` — the value types hooks pass and return;
* :mod:`goclaw.contracts.files` — context-file names, order and cache invalidation;
* :mod:`goclaw.contracts.records` — the JSON shapes of KG and episodic records;
* :mod:`goclaw.contracts.tools` — the tool-calling contract (``ToolContext``, ``ToolResult``);
* :mod:`goclaw.contracts.schema` — a plugin's tables and migration chain, and its erasure steps.

Import the submodule you need; this package imports nothing at import time.
"""
