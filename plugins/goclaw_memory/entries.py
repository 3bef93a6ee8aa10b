"""Memory entries written by the API: the marker line, validation, parsing.

See :mod:`goclaw_memory.writer` for the format and the write operations.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from goclaw.errors import ValidationError

MAX_TEXT_CHARS = 20_000
MAX_META_CHARS = 2_000
MAX_META_DEPTH = 8  # nesting of objects and arrays: JSON encoders downstream recurse
_MARKER_RE = re.compile(r"^<!-- goclaw-memory (?P<attrs>.*) -->\s*$")
_ENTRY_ID_RE = re.compile(r"^mem_[0-9a-f]{10}$")
_TAG_RE = re.compile(r"^[\w.-]{1,40}$")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


@dataclass
class MemoryEntry:
    """One entry written by the API (``list`` returns these)."""

    id: str
    path: str
    start_line: int  # the marker line
    end_line: int  # the last text line
    added: str
    text: str
    scope: str
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    corrected: str | None = None
    existing: bool = False  # ``add`` found it already stored (an identical memory)

    def as_json(self) -> dict[str, Any]:
        data = {
            "id": self.id,
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "scope": self.scope,
            "added": self.added,
            "tags": self.tags,
            "metadata": self.metadata,
            "text": self.text,
        }
        if self.corrected:
            data["corrected"] = self.corrected
        if self.existing:
            data["existing"] = True
        return data


def clean_text(text: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ValidationError("a memory needs some text")
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    if len(text) > MAX_TEXT_CHARS:
        raise ValidationError(f"a memory is at most {MAX_TEXT_CHARS} characters (got {len(text)})")
    if "\x00" in text:
        raise ValidationError("a memory cannot contain NUL characters")
    if not text.isascii() and _SURROGATE_RE.search(text):
        raise ValidationError("a memory must be valid Unicode text (it holds a lone surrogate)")
    if any(_MARKER_RE.match(line) for line in text.split("\n")):
        raise ValidationError("a memory cannot contain a goclaw-memory marker line")
    # A blank line ends an entry, so blank lines inside the text are dropped: one block.
    return "\n".join(line for line in text.split("\n") if line.strip())


def clean_tags(tags: Sequence[str] | None) -> list[str]:
    out: list[str] = []
    for tag in tags or ():
        t = str(tag).strip().lstrip("#")
        if not _TAG_RE.match(t):
            raise ValidationError(f"invalid tag {tag!r}: letters, digits, '_', '.', '-' (at most 40)")
        if t not in out:
            out.append(t)
    return out


def clean_meta(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    if not metadata:
        return {}
    if not isinstance(metadata, Mapping):
        raise ValidationError("metadata must be a JSON object")
    try:
        encoded = json.dumps(dict(metadata), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"metadata must be JSON-serialisable ({exc})") from None
    if len(encoded) > MAX_META_CHARS or "-->" in encoded or "\n" in encoded:
        raise ValidationError(f"metadata must be one JSON object under {MAX_META_CHARS} characters")
    if meta_depth(metadata) > MAX_META_DEPTH:
        raise ValidationError(f"metadata must nest objects and arrays at most {MAX_META_DEPTH} deep")
    if _SURROGATE_RE.search(encoded):
        raise ValidationError("metadata must be valid Unicode text (it holds a lone surrogate)")
    return dict(json.loads(encoded))


def meta_depth(value: Any) -> int:
    """How deep objects and arrays nest in ``value`` (a scalar: 0), without recursing."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, Mapping) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if depth <= MAX_META_DEPTH:  # one level past the bound is enough to refuse
            stack.extend((child, depth + 1) for child in children)
    return deepest


def marker(entry_id: str, added: str, tags: list[str], meta: dict[str, Any], corrected: str | None) -> str:
    parts = [f"id={entry_id}", f"added={added}"]
    if corrected:
        parts.append(f"corrected={corrected}")
    if tags:
        parts.append("tags=" + ",".join(tags))
    if meta:
        parts.append("meta=" + json.dumps(meta, ensure_ascii=False, sort_keys=True))
    return f"<!-- goclaw-memory {' '.join(parts)} -->"


def parse_marker(line: str) -> dict[str, Any] | None:
    m = _MARKER_RE.match(line)
    if m is None:
        return None
    attrs = m["attrs"]
    out: dict[str, Any] = {"tags": [], "metadata": {}}
    meta_at = attrs.find(" meta=")
    if meta_at >= 0:
        with contextlib.suppress(ValueError, RecursionError):
            meta = json.loads(attrs[meta_at + 6 :])
            # A marker written before the depth bound may nest deeper: read it as no metadata.
            out["metadata"] = meta if isinstance(meta, dict) and meta_depth(meta) <= MAX_META_DEPTH else {}
        attrs = attrs[:meta_at]
    for part in attrs.split():
        key, _, value = part.partition("=")
        if key == "tags":
            out["tags"] = [t for t in value.split(",") if t]
        elif key in ("id", "added", "corrected"):
            out[key] = value
    return out if _ENTRY_ID_RE.match(str(out.get("id", ""))) else None


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def read_lines(path: Path) -> list[str]:
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def entry_span(lines: list[str], start: int) -> int:
    """The last line (0-based) of the entry whose marker is at ``start``."""
    end = start
    while end + 1 < len(lines) and lines[end + 1].strip() and parse_marker(lines[end + 1]) is None:
        end += 1
    return end


def iso(when: datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")
