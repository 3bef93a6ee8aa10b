"""The value types hooks pass and return (issue 13 item 1), in one place for plugin authors.

They are defined in :mod:`goclaw.types` (the kernel uses them everywhere) and re-exported here,
so a plugin needs nothing from goclaw but ``goclaw.hookimpl`` and ``goclaw.contracts``. The
Protocols are structural: a plugin may return any object with the same attributes.
"""

from __future__ import annotations

from goclaw.types import (
    ConsolidationWorker,
    ContextFile,
    ContextFileSource,
    Factory,
    PromptContext,
    PromptMode,
    PromptRequest,
    PromptSection,
    SearchHit,
    SkillTier,
    SlashCommand,
    SlashResult,
    Tool,
    ToolInfo,
)

__all__ = [
    "ConsolidationWorker",
    "ContextFile",
    "ContextFileSource",
    "Factory",
    "PromptContext",
    "PromptMode",
    "PromptRequest",
    "PromptSection",
    "SearchHit",
    "SkillTier",
    "SlashCommand",
    "SlashResult",
    "Tool",
    "ToolInfo",
]
