"""The context-file truncation pipeline.

A pure function over an ordered list of files; no engine, no database. Every length is counted
in characters (Python ``len``, Unicode code points), so a cut never splits a character.

1. Skip empty, whitespace-only or missing files: they cost nothing.
2. A file longer than ``max_chars_per_file`` (strictly greater) keeps its head (70 % of the
   limit) and its tail (20 %) with the marker line ``[...truncated, read FILE for full
   content...]`` on its own line between them. The marker comes on top of head and tail, so
   with a tiny limit the result can be longer than the limit (see :func:`trim_to_limit`).
3. The result is clamped to the remaining total budget (starting at ``total_max_chars``); a
   clamped file never exceeds the budget, marker included. A file that does not fit is cut
   from the original (head + marker), so the kept text is always a prefix of the file.
4. Before each file: when the remaining budget is below ``min_file_budget`` (64), stop.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import BaseModel, Field

ELLIPSIS = "…"


class TruncateConfig(BaseModel):
    """The truncation knobs, read from ``[plugins.prompt]``."""

    max_chars_per_file: int = Field(default=20_000, ge=1, description="per-file limit (characters)")
    total_max_chars: int = Field(default=24_000, ge=0, description="budget for all files together")
    min_file_budget: int = Field(
        default=64, ge=0, description="stop adding files once the remaining budget is below this"
    )
    head_ratio: float = Field(default=0.7, gt=0, lt=1, description="share of the limit kept from the head")
    tail_ratio: float = Field(default=0.2, ge=0, lt=1, description="share of the limit kept from the tail")


@dataclass(frozen=True)
class TruncatedFile:
    """One file after the pipeline: what enters the prompt, and what was cut."""

    name: str
    content: str
    original_chars: int
    truncated: bool
    source: str = "agent"
    virtual: bool = False

    @property
    def chars(self) -> int:
        return len(self.content)


def marker_line(name: str) -> str:
    """The line inserted where content was cut: it names the file to read for the rest."""
    return f"[...truncated, read {name} for full content...]"


def trim_to_limit(name: str, content: str, limit: int, head_ratio: float, tail_ratio: float) -> str:
    """Keep head + marker line + tail of ``content`` (step 2 above).

    Always the same shape: the first ``int(head_ratio·limit)`` and the last
    ``int(tail_ratio·limit)`` characters around the marker line. The limit bounds the content
    kept, not the marker: with the default 20,000 the result (18,000 + marker) stays under the
    limit, but with a limit that leaves less than a marker line of slack (about 10 × the
    marker's ~50 characters or less) the result is longer than the limit, e.g. 100 chars at a
    limit of 50 give 35 + marker + 10. Step 3 (the total budget) still caps every file.
    """
    if len(content) <= limit:
        return content
    head = int(limit * head_ratio)
    tail = int(limit * tail_ratio)
    tail_text = content[len(content) - tail :] if tail > 0 else ""
    return content[:head] + "\n" + marker_line(name) + "\n" + tail_text


def clamp_to_budget(name: str, content: str, budget: int) -> str:
    """Cut ``content`` to at most ``budget`` characters (step 3).

    When the budget can hold the marker line, the file keeps its head and ends with the marker
    (so the model knows where the rest is); otherwise it ends with a one-character ellipsis,
    which counts against the budget.
    """
    if budget <= 0:
        return ""
    if len(content) <= budget:
        return content
    marker = "\n" + marker_line(name)
    if budget > len(marker) + 1:
        return content[: budget - len(marker)] + marker
    return content[: budget - 1] + ELLIPSIS


def build_context_files(files: Iterable[object], config: TruncateConfig | None = None) -> list[TruncatedFile]:
    """Run the four-step pipeline over ``files`` in their given order.

    ``files`` are objects with ``name`` and ``content`` (and optionally ``source``, ``virtual``,
    ``missing``), e.g. :class:`goclaw.contracts.hooks.ContextFile`.
    """
    cfg = config or TruncateConfig()
    remaining = cfg.total_max_chars
    out: list[TruncatedFile] = []
    for f in files:
        if remaining < cfg.min_file_budget:
            break
        name: str = f.name  # type: ignore[attr-defined]
        content: str | None = getattr(f, "content", None)
        if getattr(f, "missing", False) or content is None or not content.strip():
            continue
        text = trim_to_limit(name, content, cfg.max_chars_per_file, cfg.head_ratio, cfg.tail_ratio)
        if len(text) > remaining:
            # Clamp the original, not the trimmed text: what is kept is then always a true
            # prefix of the file plus the marker, never a cut through the marker or the tail;
            # and at least one character shorter than the file, so it still shows as cut.
            text = clamp_to_budget(name, content, min(remaining, len(content) - 1))
        if not text:
            continue  # no budget left for this file (possible when min_file_budget is 0)
        remaining -= len(text)
        out.append(
            TruncatedFile(
                name=name,
                content=text,
                original_chars=len(content),
                truncated=text != content,
                source=getattr(f, "source", "agent"),
                virtual=bool(getattr(f, "virtual", False)),
            )
        )
    return out
