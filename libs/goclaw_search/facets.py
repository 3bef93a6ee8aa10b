"""What a memory search filter matches: a chunk's tags, dates and path.

A memory chunk carries, from its own text and path only (so every search backend derives them
alike, from what it stores):

* **tags**: the tags of the memory entries whose marker line is in the chunk (an entry written
  through the memory API starts with ``<!-- goclaw-memory id=... added=... tags=a,b -->``);
* **dates**: the date in the file's name (``memory/2026-12-03.md``: any file named
  ``YYYY-MM-DD.md``) plus the day (UTC) of each of those entries' ``added`` time;
* **path**: as a search hit shows it (``users/<U>/`` first for a user's file) and within its
  scope (without that prefix); a path prefix matches either.

A filter (:class:`SearchFilter`, or any object with its attributes) matches a chunk that has
every one of its tags, a date in ``since..until`` (ISO days, both inclusive, either open) and a
path that starts with its prefix. A chunk without a date never matches a date range.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NamedTuple

MARKER = "<!-- goclaw-memory "  # what a chunk holding an entry's marker line contains
_MARKER_LINE = re.compile(r"^<!-- goclaw-memory (?P<attrs>.*) -->[ \t]*$", re.M)
_DATED = re.compile(r"(?:^|/)(\d{4}-\d{2}-\d{2})\.md$")
_ADDED = re.compile(r"(?:^| )added=(\d{4}-\d{2}-\d{2})")
_TAGS = re.compile(r"(?:^| )tags=(\S+)")


@dataclass(frozen=True)
class SearchFilter:
    """Which chunks a memory search may return (``SearchQuery.filter`` of the search-backend
    contract): every one of ``tags``, a date in ``since..until`` (ISO days, inclusive; None:
    open) and a path starting with ``path_prefix``."""

    tags: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    path_prefix: str = ""


class Facets(NamedTuple):
    tags: frozenset[str]
    dates: tuple[str, ...]


NO_FACETS = Facets(frozenset(), ())


def chunk_facets(path: str, text: str | None) -> Facets:
    """The tags and dates of a chunk (``text`` None or without a marker: the file's date only)."""
    dated = _DATED.search(path)
    dates = [dated.group(1)] if dated else []
    tags: set[str] = set()
    if text and MARKER in text:
        for m in _MARKER_LINE.finditer(text):
            attrs = m["attrs"].split(" meta=", 1)[0]
            if added := _ADDED.search(attrs):
                dates.append(added.group(1))
            if found := _TAGS.search(attrs):
                tags.update(t for t in found.group(1).split(",") if t)
    if not dates and not tags:
        return NO_FACETS
    return Facets(frozenset(tags), tuple(sorted(set(dates))))


def needs_text(flt: Any) -> bool:
    """Whether the filter reads a chunk's text (tags or a date range), not its path alone."""
    return bool(flt.tags) or flt.since is not None or flt.until is not None


def path_matches(prefix: str, user_id: str, path: str) -> bool:
    """Whether ``path`` (as stored: ``users/<U>/...`` for a user's file) starts with ``prefix``,
    as shown or within its scope."""
    if not prefix or path.startswith(prefix):
        return True
    own = f"users/{user_id}/"
    return bool(user_id) and path.startswith(own) and path[len(own) :].startswith(prefix)


def facets_match(flt: Any, facets: Facets) -> bool:
    """Whether a chunk with these facets passes the filter's tags and date range."""
    if flt.tags and not facets.tags.issuperset(flt.tags):
        return False
    if flt.since is None and flt.until is None:
        return True
    lo, hi = flt.since or "0000-00-00", flt.until or "9999-99-99"
    return any(lo <= d <= hi for d in facets.dates)


def matches(flt: Any, user_id: str, path: str, text: str | None) -> bool:
    """Whether the chunk passes the filter (``None`` passes everything)."""
    if flt is None:
        return True
    if not path_matches(flt.path_prefix, user_id, path):
        return False
    return not needs_text(flt) or facets_match(flt, chunk_facets(path, text))
