"""Memory search filters: what a caller may give, and the chunks they let through.

Every surface (``engine.memory.search(..., filters=...)``, ``goclaw memory search --tag/--since/
--until/--path/--scope``, the HTTP and MCP search, the ``memory_search`` tool) passes one mapping
with any of these keys (docs/memory.md, "Filters"):

* ``tags``: a tag or a list of tags; a chunk matches when it carries every one;
* ``since`` / ``until``: ISO days (``2026-12-03``), both inclusive: the memory file's date
  (``memory/YYYY-MM-DD.md``) or one of the chunk's entries' ``added`` days;
* ``path``: a path prefix (``memory/``, ``users/alice/``), as hits show paths or within a scope;
* ``scope``: ``agent`` (agent-level memory only) or ``user`` (the user's own only).

Tags, dates and path become a :class:`goclaw_search.facets.SearchFilter` the backend applies
before ranking (:mod:`goclaw_search.facets` says what a chunk carries); the scope narrows the
search's users. :func:`allowed_ids` is how this plugin's backends find the matching chunks.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import numpy as np
from sqlalchemy import text

from goclaw.errors import ValidationError
from goclaw_memory.entries import clean_tags
from goclaw_search.facets import (
    MARKER,
    Facets,
    SearchFilter,
    chunk_facets,
    facets_match,
    needs_text,
    path_matches,
)

FILTER_KEYS = ("tags", "since", "until", "path", "scope")
SCOPES = ("agent", "user")
_DAY = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}"}
# The JSON schema of ``filters`` (the memory_search tool, the MCP tool).
FILTER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "only hits that match: every tag, a day in since..until, a path prefix, a scope",
    "properties": {
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
        "since": {**_DAY, "description": "first day (YYYY-MM-DD), inclusive"},
        "until": {**_DAY, "description": "last day (YYYY-MM-DD), inclusive"},
        "path": {"type": "string", "description": "path prefix, e.g. memory/"},
        "scope": {"type": "string", "enum": list(SCOPES)},
    },
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Filters:
    """A search's filters: what the backend applies (``chunks``) and the scope."""

    chunks: SearchFilter | None = None
    scope: str | None = None  # "agent" | "user" | None (both, as the search's user says)

    def users(self, users: tuple[str, ...]) -> tuple[str, ...]:
        """The search's scopes narrowed to the filter's."""
        if self.scope == "agent":
            return ("",)
        if self.scope == "user":
            return tuple(u for u in users if u)
        return users


def parse_filters(raw: Mapping[str, Any] | Filters | None, user: str | None) -> Filters:
    """:class:`Filters` from what a caller gave; a :class:`ValidationError` (one line) names
    the first bad value."""
    if raw is None or isinstance(raw, Filters):
        return raw or Filters()
    if not isinstance(raw, Mapping):
        raise ValidationError("filters must be an object with tags, since, until, path or scope")
    unknown = sorted(set(raw) - set(FILTER_KEYS))
    if unknown:
        raise ValidationError(f"unknown filter {unknown[0]!r}: use {', '.join(FILTER_KEYS)}")
    tags = raw.get("tags")
    if isinstance(tags, str):
        tags = [t for t in tags.split(",") if t.strip()]
    elif tags is not None and not isinstance(tags, Sequence):
        raise ValidationError("filter 'tags' must be a tag or a list of tags")
    since, until = _day(raw.get("since"), "since"), _day(raw.get("until"), "until")
    if since and until and since > until:
        raise ValidationError(f"filter 'since' ({since}) is after 'until' ({until})")
    path = _prefix(raw.get("path"))
    scope = raw.get("scope") or None
    if scope is not None and scope not in SCOPES:
        raise ValidationError(f"unknown scope {scope!r}: use agent or user")
    if scope == "user" and not user:
        raise ValidationError("filter scope 'user' needs a user to search as")
    cleaned = tuple(clean_tags(tags))
    chunks = SearchFilter(cleaned, since, until, path) if cleaned or since or until or path else None
    return Filters(chunks, scope)


def _day(value: Any, name: str) -> str | None:
    """An ISO day from a date, a datetime or a string (``2026-12-03``, or a full ISO time)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    try:
        return date.fromisoformat(str(value).strip()[:10]).isoformat()
    except ValueError:
        raise ValidationError(f"bad date {value!r} for filter {name!r}: use YYYY-MM-DD") from None


def _prefix(value: Any) -> str:
    """A relative path prefix in POSIX form (``./`` and leading ``/`` refused, ``..`` too)."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise ValidationError("filter 'path' must be a path prefix (a string)")
    prefix = value.strip().replace("\\", "/")
    while prefix.startswith("./"):
        prefix = prefix[2:]
    if prefix.startswith("/") or ".." in prefix.split("/") or "\x00" in prefix:
        raise ValidationError(f"bad path prefix {value!r}: a path within the memory folder, like memory/")
    return prefix


# --------------------------------------------------------------------------- matching chunks

FacetRow = tuple[int, str, str, Facets]  # id, user id, path, facets

_FACET_ROWS = text(
    "SELECT id, user_id, path, CASE WHEN text LIKE :m THEN text END FROM memory_chunks WHERE agent_id = :a"
)


def read_facet_rows(engine: Any, agent_id: str) -> list[FacetRow]:
    """Every chunk of the agent with its facets (the text read only of chunks with a marker)."""
    with engine.db.engine.connect() as conn:
        found = conn.execute(_FACET_ROWS, {"m": f"%{MARKER}%", "a": agent_id}).all()
    return [(int(i), u, p, chunk_facets(p, t)) for i, u, p, t in found]


def allowed_ids(rows: Sequence[FacetRow], flt: SearchFilter, users: Sequence[str]) -> np.ndarray:
    """The ids of the rows in ``users``' scopes that pass ``flt``, sorted (int64)."""
    scopes, prefix, facets = set(users), flt.path_prefix, needs_text(flt)
    return np.array(
        sorted(
            i
            for i, u, p, f in rows
            if u in scopes and path_matches(prefix, u, p) and (not facets or facets_match(flt, f))
        ),
        dtype=np.int64,
    )


class FacetCache:
    """Each agent's facet rows, read once per version token of its chunks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, tuple[str, list[FacetRow]]] = {}

    def rows(self, engine: Any, agent_id: str, token: str) -> list[FacetRow]:
        with self._lock:
            held = self._rows.get(agent_id)
        if held is not None and held[0] == token:
            return held[1]
        rows = read_facet_rows(engine, agent_id)
        with self._lock:
            self._rows[agent_id] = (token, rows)
        return rows

    def drop(self, agent_id: str | None = None) -> None:
        with self._lock:
            if agent_id is None:
                self._rows.clear()
            else:
                self._rows.pop(agent_id, None)
