"""Prompt wrappers: the one way untrusted text is kept inside its block.

The system prompt isolates text it does not control in XML-like wrappers: context files in
``<context_file>``, virtual files in ``<system_context>``, the runtime's extra prompt in
``<extra_context>``, an activated skill in ``<skill_instructions>``, recalled memories in
``<memory_context>``. Inside such text, the ``<`` of any wrapper tag (opening or closing, any
case, spaces allowed) becomes the look-alike ``＜`` (U+FF1C), so the text can neither close
its own block nor open a fake one. The replacement keeps the length, so truncation budgets
still hold. Values written into a prompt *line* (a user id, a channel, a path) go through
:func:`single_line`: no line breaks or control characters, and the same neutralising.

Every plugin that puts untrusted text into a prompt uses :func:`wrap` or :func:`neutralise`
(plugins cannot import each other, so this lives in a library). A tool's result reaches the
model too (over MCP, HTTP or the runtime's loop), so tools that return stored text pass it
through :func:`neutralise_data`.
"""

from __future__ import annotations

import re
from typing import Any

WRAPPER_TAGS: tuple[str, ...] = (
    "context_file",
    "system_context",
    "extra_context",
    "internal_config",
    "available_skills",
    "skill_instructions",
    "memory_context",
)
_WRAPPER = re.compile(r"<(?=\s*/?\s*(?:" + "|".join(WRAPPER_TAGS) + r")\b)", re.I)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def neutralise(text: str) -> str:
    """``text`` with the ``<`` of every wrapper tag replaced by ``＜`` (same length)."""
    return _WRAPPER.sub("＜", text)


def neutralise_data(value: Any) -> Any:
    """``value`` (JSON-like: strings, lists, tuples, dicts) with :func:`neutralise` applied to
    every string in it, dictionary keys included; other values as they are."""
    if isinstance(value, str):
        return neutralise(value)
    if isinstance(value, dict):
        return {neutralise_data(k): neutralise_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(neutralise_data(v) for v in value)
    return value


def attr(value: str) -> str:
    """A value safe inside a double-quoted attribute."""
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def wrap(tag: str, body: str, **attrs: str) -> str:
    """``<tag a="...">`` + neutralised ``body`` + ``</tag>``, each on its own line."""
    extra = "".join(f' {k}="{attr(v)}"' for k, v in attrs.items())
    return f"<{tag}{extra}>\n{neutralise(body)}\n</{tag}>"


def single_line(value: object, limit: int | None = None) -> str:
    """``value`` made safe for one prompt line: whitespace runs (line breaks included) become
    one space, other control characters are dropped, wrapper tags are neutralised; at most
    ``limit`` characters."""
    text = _CONTROL.sub("", " ".join(str(value).split()))
    text = neutralise(text)
    return text if limit is None else text[:limit]
