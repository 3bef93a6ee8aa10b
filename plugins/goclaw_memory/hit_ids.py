"""The stable ids of memory search hits, which ``memory_get`` accepts.

An id embeds a tag of the scope it was found in, so an id copied from another agent's or user's
results is refused (:func:`parse_memory_hit_id`), never read.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from goclaw.errors import PermissionDeniedError, ValidationError


def scope_tag(agent_id: str, user_id: str) -> str:
    """A short tag naming one memory scope (an agent's level, or one user of it)."""
    return hashlib.sha256(f"{agent_id}\0{user_id}".encode()).hexdigest()[:10]


def memory_hit_id(kind: str, agent_id: str, user_id: str, locator: str) -> str:
    """The stable id of a memory search hit: ``<kind>:<scope tag>:<locator>``.

    ``kind`` is ``m`` (a memory file's lines; locator ``path#Lstart-Lend``) or ``e`` (an
    episodic summary; locator its id). The same chunk gets the same id on every search.
    """
    return f"{kind}:{scope_tag(agent_id, user_id)}:{locator}"


@dataclass(frozen=True)
class MemoryRef:
    kind: str  # "m" | "e"
    user_id: str  # "" = agent level
    locator: str


_ID_RE = re.compile(r"^(?P<kind>[me]):(?P<tag>[0-9a-f]{10}):(?P<loc>.+)$", re.S)


def parse_memory_hit_id(hit_id: str, agent_id: str, user: str | None) -> MemoryRef:
    """Resolve a hit id within the caller's scope (agent level, plus ``user``'s own).

    Refuses (:class:`PermissionDeniedError`) an id from another agent's or user's results.
    """
    m = _ID_RE.match(hit_id or "")
    if m is None:
        raise ValidationError(f"{hit_id!r} is not a memory hit id (ids come from memory_search)")
    scopes = [""] + ([user] if user else [])
    for uid in scopes:
        if scope_tag(agent_id, uid) == m["tag"]:
            return MemoryRef(m["kind"], uid, m["loc"])
    raise PermissionDeniedError(f"memory id {hit_id!r} belongs to another agent or user")


def split_line_locator(locator: str) -> tuple[str, int, int]:
    """``path#L3-L9`` → ``("path", 3, 9)``."""
    m = re.match(r"^(?P<path>.+)#L(?P<s>\d+)-L(?P<e>\d+)$", locator, re.S)
    if m is None:
        raise ValidationError(f"bad memory locator {locator!r}")
    return m["path"], int(m["s"]), int(m["e"])
