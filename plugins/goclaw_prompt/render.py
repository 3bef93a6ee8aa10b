"""Rendering helpers shared by the prompt sections.

Context-file content must never break out of its wrapper: an opening or closing tag of one of
the prompt's own wrappers (``context_file``, ``system_context``, ``extra_context``, ...) inside
content has its ``<`` replaced by the look-alike ``＜`` (U+FF1C). The replacement keeps the
length, so the truncation budget still holds. The mechanism is the library
:mod:`goclaw_text.wrappers`, which every other plugin's wrapper uses too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from goclaw_text.wrappers import WRAPPER_TAGS, attr, neutralise, single_line

if TYPE_CHECKING:
    from collections.abc import Callable

    from goclaw.contracts.host import PromptContext

FULL = frozenset({"full"})
ALL_MODES = frozenset({"full", "task", "minimal"})


def escape_wrapped(text: str) -> str:
    """Neutralise the prompt's own wrapper tags inside ``text`` (same length)."""
    return neutralise(text)


def one_line(value: object, limit: int = 100) -> str:
    """A runtime value made safe for one prompt line: no newlines, control characters, quotes
    or wrapper tags; capped."""
    return single_line(str(value).replace('"', ""), limit)


__all__ = ["ALL_MODES", "FULL", "WRAPPER_TAGS", "Section", "attr", "escape_wrapped", "one_line"]


@dataclass
class Section:
    """A prompt section (:class:`goclaw.contracts.host.PromptSection`) backed by a render function."""

    name: str
    order: float
    modes: frozenset[str]
    renderer: Callable[[PromptContext], str | None]

    def render(self, ctx: PromptContext) -> str | None:
        return self.renderer(ctx)
