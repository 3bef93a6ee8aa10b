"""Memory hits from fused chunks.

The fusion itself (both channels scored for every candidate, the weighted sum of
``text_weight`` / ``vector_weight`` or another method, the ×1.2 user boost) happens in the
backend with :func:`goclaw_search.fusion.fuse`. Here hits are de-duplicated by (path within its scope,
start line): a user's copy of a file (``users/U/MEMORY.md`` line 1) wins over the agent-level
copy (``MEMORY.md`` line 1) when their text is the same; with different texts both compete. Then
:func:`distinct` makes the results a user counts: overlapping or adjacent chunks of one file
region become one hit with the region's line range.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from goclaw.contracts.search import ChunkRow, ScoredChunk
from goclaw_memory.chunking import without_markers
from goclaw_memory.paths import scope_prefix
from goclaw_memory.search_rows import ChunkTexts, LazyRow, RowBlock


@dataclass
class MemoryHit:
    """One memory search hit; :meth:`as_json` is the CLI/tool shape."""

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


class LazyHit(MemoryHit):
    """A hit whose ``snippet`` is read on first use, with every unread candidate of its search,
    in one query (``texts``: the search's :class:`ChunkTexts`); :func:`with_texts` reads the
    returned hits' at once. A chunk deleted since the search reads as ``""`` (:func:`with_texts`
    drops it). ``snippet`` None: not read yet (then it is absent from the instance, and
    ``__getattr__`` reads it: a plain attribute afterwards, and cheaper to make than a property)."""

    def __init__(
        self,
        path: str,
        start_line: int,
        end_line: int,
        score: float,
        scope: str,
        snippet: str | None,
        tier: str = "document",
        user_id: str = "",
        chunk_id: int | None = None,
        channels: dict[str, float] | None = None,
        id: str = "",
        terms: Any = None,
        texts: ChunkTexts | None = None,
    ) -> None:
        self.path, self.start_line, self.end_line, self.score, self.scope = (
            path,
            start_line,
            end_line,
            score,
            scope,
        )
        if snippet is not None:
            self.snippet = snippet
        self.tier, self.user_id, self.chunk_id = tier, user_id, chunk_id
        self.channels = {} if channels is None else channels
        self.id, self.terms, self._texts = id, terms, texts

    def __getattr__(self, name: str) -> Any:
        if name != "snippet":
            raise AttributeError(name)
        texts = self.__dict__.get("_texts")
        cid = self.__dict__.get("chunk_id")
        text = without_markers(texts.text(cid)) if texts is not None and cid is not None else ""
        self.snippet = text
        return text


def with_texts(hits: Sequence[MemoryHit], limit: int) -> list[MemoryHit]:
    """The first ``limit`` hits with their text: the unread texts of lazy hits read in one
    query per search; a hit whose chunk was deleted since the search is dropped and the next
    takes its place."""
    out: list[MemoryHit] = []
    at = 0
    while len(out) < limit and at < len(hits):
        part = hits[at : at + limit - len(out)]
        at += len(part)
        lazy = [
            h for h in part if type(h) is LazyHit and "snippet" not in h.__dict__ and h._texts is not None
        ]
        if lazy:
            by_search: dict[int, tuple[ChunkTexts, list[int]]] = {}
            for h in lazy:
                texts = h._texts
                by_search.setdefault(id(texts), (texts, []))[1].append(h.chunk_id)
            for texts, ids in by_search.values():
                texts.load(ids)
        # A copy made with dataclasses.replace has no texts (it read its snippet): a plain hit.
        out.extend(
            h for h in part if type(h) is not LazyHit or h._texts is None or not h._texts.gone(h.chunk_id)
        )
    for h in out:
        if type(h) is LazyHit:
            _ = h.snippet  # the text in place (the hit outlives its search's texts)
    return out


def build_hits(chunks: Sequence[ScoredChunk], rows: Mapping[int, ChunkRow], limit: int) -> list[MemoryHit]:
    """Hits from a backend's fused chunks (best first): de-duplicated by (path within its
    scope, start line), a user's copy winning over the agent-level one; at most ``limit``."""
    best: dict[tuple[Any, ...], MemoryHit] = {}  # in order of first appearance
    get = rows.get
    for c in chunks:
        row = get(c.id)
        if row is None or c.score <= 0:  # deleted between the search and the row fetch
            continue
        user, path, start = row.user_id, row.path, row.start_line
        key: tuple[Any, ...] = (path[len(scope_prefix(user)) :] if user else path, start)
        current = best.get(key)
        if current is not None and current.user_id != user and current.snippet != without_markers(row.text):
            key = (*key, user)  # another scope's copy with other text: both compete
            current = best.get(key)
        if current is not None and (current.user_id or not user):
            continue  # only a user's copy replaces an agent-level one (in its place)
        channels = _channels(c.lexical, c.vector)
        if type(row) is LazyRow:  # the text read only if something reads the snippet
            d = row.__dict__
            scope = "user" if user else "agent"
            best[key] = LazyHit(
                path,
                start,
                d["end_line"],
                c.score,
                scope,
                d["_text"],
                "document",
                user,
                c.id,
                channels,
                "",
                d["terms"],
                d["_texts"],
            )
            continue
        # Positional: a dataclass's keyword call costs twice as much (60 hits per search).
        best[key] = MemoryHit(
            path,
            start,
            row.end_line,
            c.score,
            "user" if user else "agent",
            without_markers(row.text),
            "document",
            user,
            c.id,
            channels,
            "",
            row.terms,
        )
    ranked = sorted(best.values(), key=_rank)
    return ranked[: max(0, limit)]


def block_hits(chunks: Sequence[ScoredChunk], block: RowBlock) -> list[MemoryHit]:
    """:func:`build_hits` (every one) of chunks whose rows are a :class:`RowBlock` (aligned
    with them): lazy hits made from its columns, with no row object per candidate."""
    best: dict[tuple[Any, ...], MemoryHit] = {}
    texts = block.texts
    terms = block.terms if block.terms is not None else [None] * len(chunks)
    cols = zip(chunks, block.users, block.paths, block.starts, block.ends, terms, strict=True)
    for c, user, path, start, end, t in cols:
        if c.score <= 0:
            continue
        key: tuple[Any, ...] = (path[len(scope_prefix(user)) :] if user else path, start)
        current = best.get(key)
        other = current is not None and current.user_id != user
        if other and texts.text(current.chunk_id) != texts.text(c.id):  # type: ignore[union-attr,arg-type]
            key = (*key, user)  # another scope's copy with other text: both compete
            current = best.get(key)
        if current is not None and (current.user_id or not user):
            continue  # only a user's copy replaces an agent-level one (in its place)
        channels = _channels(c.lexical, c.vector)
        scope = "user" if user else "agent"
        best[key] = LazyHit(
            path, start, end, c.score, scope, None, "document", user, c.id, channels, "", t, texts
        )
    return sorted(best.values(), key=_rank)


def distinct(hits: Sequence[MemoryHit], limit: int) -> list[MemoryHit]:
    """The first ``limit`` results as a user counts them, with their text: a chunk that
    overlaps or adjoins (the next line: no blank line between, so separate paragraphs and
    memory entries stay separate hits) a better hit's region of the same file joins
    that hit (:func:`merged`: the region's line range, its lines as the snippet, the best
    chunk's score and id; :data:`MAX_MERGED` chunks at most) instead of taking a place of its
    own. Chunks deleted since the search are dropped (:func:`with_texts`) and later candidates
    take their places."""
    out: list[MemoryHit] = []
    rest = list(hits)
    while rest and len(out) < limit:
        groups, rest = _regions(rest, limit - len(out))
        flat = [h for g in groups for h in g]
        alive = set(map(id, with_texts(flat, len(flat))))
        for g in groups:
            kept = [h for h in g if id(h) in alive]
            if kept:
                out.append(kept[0] if len(kept) == 1 else merged(kept))
    return out


# The most chunks one hit holds: a region's snippet stays a few chunks long (a prompt's budget).
MAX_MERGED = 3


def _regions(hits: Sequence[MemoryHit], limit: int) -> tuple[list[list[MemoryHit]], list[MemoryHit]]:
    """Up to ``limit`` groups of hits (best first), each one file region of at most
    :data:`MAX_MERGED` chunks, and the hits left after the last one looked at. A chunk touching
    a region joins the best one with room (two regions it bridges become one when they fit);
    touching only full regions, it is left out: what it adjoins is shown already."""
    groups: list[list[MemoryHit]] = []
    spans: dict[tuple[str, str], list[list[int]]] = {}  # (user, path) -> [[first, last, group]]
    live = 0
    for at, h in enumerate(hits):
        if h.tier == "document" and h.chunk_id is not None:
            near = spans.setdefault((h.user_id, h.path), [])
            touching = [s for s in near if h.start_line <= s[1] + 1 and h.end_line >= s[0] - 1]
            if touching:
                room = [s for s in touching if len(groups[s[2]]) < MAX_MERGED]
                if room:  # spans are in group order: the best region first
                    keep = room[0]
                    groups[keep[2]].append(h)
                    keep[0], keep[1] = min(keep[0], h.start_line), max(keep[1], h.end_line)
                    for other in room[1:]:
                        if len(groups[keep[2]]) + len(groups[other[2]]) <= MAX_MERGED:
                            groups[keep[2]] += groups[other[2]]
                            groups[other[2]] = []
                            keep[0], keep[1] = min(keep[0], other[0]), max(keep[1], other[1])
                            near.remove(other)
                            live -= 1
                continue
            if live == limit:
                return [g for g in groups if g], list(hits[at:])
            near.append([h.start_line, h.end_line, len(groups)])
        elif live == limit:
            return [g for g in groups if g], list(hits[at:])
        groups.append([h])
        live += 1
    return [g for g in groups if g], []


def merged(group: Sequence[MemoryHit]) -> MemoryHit:
    """One hit for chunks of one file region (the best first): their lines in file order
    (pieces of one long line joined by a space, a line between two chunks kept as a blank
    line), the best one's score, channels and chunk id."""
    best = group[0]
    parts = sorted(group, key=lambda h: (h.start_line, h.end_line, h.chunk_id or 0))
    text = parts[0].snippet
    end = parts[0].end_line
    for h in parts[1:]:
        sep = " " if h.start_line <= end else "\n" * min(2, h.start_line - end)
        text += sep + h.snippet
        end = max(end, h.end_line)
    return MemoryHit(
        best.path,
        parts[0].start_line,
        end,
        best.score,
        best.scope,
        text,
        best.tier,
        best.user_id,
        best.chunk_id,
        dict(best.channels),
    )


def fusion_weights(settings: Any, embedder: Any) -> tuple[float, float]:
    """``(text_weight, vector_weight)`` of a search: the ``[plugins.memory]`` ones when the user
    set either, else the embedder's own ``fusion_weights`` when it has them (the ``onnx``
    model's vector channel is as good as full text: 0.5 / 0.5), else the defaults (0.7 / 0.3,
    chosen with the weak static model)."""
    if embedder is not None and not {"text_weight", "vector_weight"} & settings.model_fields_set:
        own = getattr(embedder, "fusion_weights", None)
        if own is not None:
            return float(own[0]), float(own[1])
    return settings.text_weight, settings.vector_weight


def _rank(h: MemoryHit) -> tuple[float, str, int]:
    return (-h.score, h.path, h.start_line)


def _channels(lexical: float | None, vector: float | None) -> dict[str, float]:
    """A hit's per-channel scores (a channel that did not score it is left out)."""
    out = {}
    if lexical is not None:
        out["lexical"] = lexical
    if vector is not None:
        out["vector"] = vector
    return out
