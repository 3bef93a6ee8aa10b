"""The hybrid merge of full-text and vector candidates (spec §15, DECISIONS.md "hybrid memory merge").

* full-text scores are normalised to 0..1 by the best full-text score of the query;
* vector scores are cosine similarities (negative ones count as 0);
* score = 0.3 × full text + 0.7 × vector; when one channel returned nothing the other has
  weight 1.0 (the single-channel rule, also used by ``--channel lexical|vector``);
* a per-user chunk's score is multiplied by 1.2;
* hits are de-duplicated by (path within its scope, start line): a user's copy of a file
  (``users/U/MEMORY.md`` line 1) wins over the agent-level copy (``MEMORY.md`` line 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from goclaw_memory.backends import ChunkRow
from goclaw_memory.paths import scope_prefix

TEXT_WEIGHT = 0.3
VECTOR_WEIGHT = 0.7
USER_BOOST = 1.2


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

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "score": round(self.score, 6),
            "scope": self.scope,
            "snippet": self.snippet,
            "tier": self.tier,
        }


def hybrid_merge(
    lexical: Sequence[tuple[int, float]],
    vector: Sequence[tuple[int, float]],
    rows: Mapping[int, ChunkRow],
    *,
    limit: int,
    text_weight: float = TEXT_WEIGHT,
    vector_weight: float = VECTOR_WEIGHT,
    user_boost: float = USER_BOOST,
) -> list[MemoryHit]:
    """Fuse the channels' candidates into ranked hits (see the module docstring)."""
    best_fts = max((s for _i, s in lexical), default=0.0)
    fts = {i: (s / best_fts if best_fts > 0 else 0.0) for i, s in lexical}
    vec = {i: max(0.0, s) for i, s in vector}
    if fts and vec:
        tw, vw = text_weight, vector_weight
    elif fts:
        tw, vw = 1.0, 0.0
    else:
        tw, vw = 0.0, 1.0
    best: dict[tuple[str, int], MemoryHit] = {}
    for cid in dict.fromkeys([*fts, *vec]):
        row = rows.get(cid)
        if row is None:  # deleted between the search and the row fetch
            continue
        score = tw * fts.get(cid, 0.0) + vw * vec.get(cid, 0.0)
        if row.user_id:
            score *= user_boost
        if score <= 0.0:
            continue
        hit = MemoryHit(
            path=row.path,
            start_line=row.start_line,
            end_line=row.end_line,
            score=score,
            scope="user" if row.user_id else "agent",
            snippet=row.text,
            user_id=row.user_id,
            chunk_id=cid,
            channels={
                k: v for k, v in (("lexical", fts.get(cid)), ("vector", vec.get(cid))) if v is not None
            },
        )
        inner = row.path[len(scope_prefix(row.user_id)) :]
        key = (inner, row.start_line)
        current = best.get(key)
        if (
            current is None
            or (hit.user_id and not current.user_id)
            or (bool(hit.user_id) == bool(current.user_id) and hit.score > current.score)
        ):
            best[key] = hit
    ranked = sorted(best.values(), key=lambda h: (-h.score, h.path, h.start_line))
    return ranked[: max(0, limit)]
