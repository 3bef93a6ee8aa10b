"""Memory hits from fused chunks (spec §15, DECISIONS.md "hybrid memory merge").

The fusion itself (both channels scored for every candidate, the spec's 0.3/0.7 weighted sum
or another method, the ×1.2 user boost) happens in the backend with
:func:`goclaw.retrieval.fusion.fuse`. Here hits are de-duplicated by (path within its scope,
start line): a user's copy of a file (``users/U/MEMORY.md`` line 1) wins over the agent-level
copy (``MEMORY.md`` line 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from goclaw.contracts.search import ChunkRow, ScoredChunk
from goclaw_memory.paths import scope_prefix


@dataclass
class MemoryHit:
    """One memory search hit; :meth:`as_json` is the CLI/tool shape (DESIGN.md §7)."""

    path: str
    start_line: int
    end_line: int
    score: float
    scope: str  # "agent" | "user"
    snippet: str
    tier: str = "document"
    user_id: str = ""
    chunk_id: int | None = None
    channels: dict[str, float] = field(default_factory=dict)
    id: str = ""  # the stable hit id memory_get / memory_expand accept (goclaw.contracts.tools)
    # The snippet's retrieval terms when the backend had them (not part of the JSON shape).
    terms: Sequence[str] | Mapping[str, Sequence[int]] | None = field(default=None, repr=False, compare=False)

    def as_json(self) -> dict[str, Any]:
        head = {"id": self.id} if self.id else {}
        return {
            **head,
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "score": round(self.score, 6),
            "scope": self.scope,
            "snippet": self.snippet,
            "tier": self.tier,
        }


def build_hits(chunks: Sequence[ScoredChunk], rows: Mapping[int, ChunkRow], limit: int) -> list[MemoryHit]:
    """Hits from a backend's fused chunks (best first): de-duplicated by (path within its
    scope, start line), a user's copy winning over the agent-level one; at most ``limit``."""
    best: dict[tuple[str, int], MemoryHit] = {}  # in order of first appearance
    get = rows.get
    for c in chunks:
        row = get(c.id)
        if row is None or c.score <= 0:  # deleted between the search and the row fetch
            continue
        user, path, start = row.user_id, row.path, row.start_line
        key = (path[len(scope_prefix(user)) :] if user else path, start)
        current = best.get(key)
        if current is not None and (current.user_id or not user):
            continue  # only a user's copy replaces an agent-level one (in its place)
        lexical, vector = c.lexical, c.vector
        if lexical is not None and vector is not None:
            channels = {"lexical": lexical, "vector": vector}
        elif lexical is not None:
            channels = {"lexical": lexical}
        else:
            channels = {} if vector is None else {"vector": vector}
        # Positional: a dataclass's keyword call costs twice as much (60 hits per search).
        best[key] = MemoryHit(
            path,
            start,
            row.end_line,
            c.score,
            "user" if user else "agent",
            row.text,
            "document",
            user,
            c.id,
            channels,
            "",
            row.terms,
        )
    ranked = sorted(best.values(), key=_rank)
    return ranked[: max(0, limit)]


def _rank(h: MemoryHit) -> tuple[float, str, int]:
    return (-h.score, h.path, h.start_line)
