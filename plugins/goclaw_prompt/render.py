"""Rendering helpers shared by the prompt sections (spec §5).

Context-file content must never break out of its wrapper: an opening or closing tag of one of
the prompt's own wrappers (``context_file``, ``system_context``, ``extra_context``, ...) inside
content has its ``<`` replaced by the look-alike ``＜`` (U+FF1C). The replacement keeps the
length, so the truncation budget still holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from goclaw.types import PromptContext

WRAPPER_TAGS = ("context_file", "system_context", "extra_context", "internal_config", "available_skills")
_WRAPPER = re.compile(r"<(?=\s*/?\s*(?:" + "|".join(WRAPPER_TAGS) + r")\b)", re.I)

FULL = frozenset({"full"})
ALL_MODES = frozenset({"full", "minimal"})


def escape_wrapped(text: str) -> str:
    """Neutralise the prompt's own wrapper tags inside ``text`` (same length)."""
    return _WRAPPER.sub("＜", text)


def attr(value: str) -> str:
    """A value safe inside a double-quoted attribute."""
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def one_line(value: object, limit: int = 100) -> str:
    """A runtime value made safe for one prompt line: no newlines or quotes, capped."""
    text = " ".join(str(value).replace('"', "").split())
    return text[:limit]


@dataclass
class Section:
    """A prompt section (:class:`goclaw.types.PromptSection`) backed by a render function."""

    name: str
    order: float
    modes: frozenset[str]
    renderer: Callable[[PromptContext], str | None]

    def render(self, ctx: PromptContext) -> str | None:
        return self.renderer(ctx)
