"""A memory search backend written from scratch in pure Python (no numpy, no built-in backend).

Select it with ``[plugins.memory] backend = "minisearch"``. It keeps its own index: one JSON
file per agent under ``[plugins.minisearch] path`` (default ``.goclaw/minisearch`` in the
workspace) holding every chunk's terms, vector and text, and the memory service's version token
it matches. Writes arrive through ``apply_changes``; when the file is behind the token (another
process indexed, the backend was not selected meanwhile) it catches up through the
``IndexSource`` the service gave ``open``. Search: BM25 (k1 1.2, b 0.75) over the agent's
chunks, cosine similarity, and the weighted fusion ``text_weight × BM25 / best BM25 +
vector_weight × cosine`` (one channel alone at weight 1.0), × ``user_boost`` for a user's own
chunks. It imports nothing from goclaw but ``hookimpl`` and ``goclaw.contracts``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from goclaw import hookimpl
from goclaw.contracts.search import (
    ChunkRecord,
    ChunkRow,
    IndexChanges,
    IndexSource,
    ScoredChunk,
    SearchBackend,
    SearchQuery,
    SearchResult,
    Space,
)
from goclaw_search.facets import matches

K1, B = 1.2, 0.75
Index = dict[str, Any]  # {"version": str, "space": [provider, model, dim] | None, "chunks": {id: chunk}}


class MiniSearchSettings(BaseModel):
    path: str = ".goclaw/minisearch"


def _entry(rec: ChunkRecord) -> dict[str, Any]:
    vector = [float(x) for x in rec.vector] if rec.vector is not None else None
    return {
        "user": rec.user_id,
        "path": rec.path,
        "lines": [rec.start_line, rec.end_line],
        "text": rec.text,
        "hash": rec.chunk_hash,
        "terms": list(rec.terms),
        "vector": vector,
    }


def _fingerprint(c: dict[str, Any]) -> tuple[str, str, str, int, bool]:
    return (c["hash"], c["user"], c["path"], c["lines"][0], c["vector"] is not None)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return max(0.0, dot / norm) if norm else 0.0


def _bm25(chunks: dict[str, dict[str, Any]], terms: Sequence[str]) -> dict[str, float]:
    """BM25 of every chunk (statistics over all the agent's chunks, as the built-ins do)."""
    n = len(chunks)
    avgdl = sum(len(c["terms"]) for c in chunks.values()) / max(n, 1)
    tfs = {i: Counter(c["terms"]) for i, c in chunks.items()}
    scores = dict.fromkeys(chunks, 0.0)
    for term in dict.fromkeys(terms):
        df = sum(1 for tf in tfs.values() if term in tf)
        if not df:
            continue
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        for i, tf in tfs.items():
            if tf[term]:
                norm = K1 * (1 - B + B * len(chunks[i]["terms"]) / max(avgdl, 1e-9))
                scores[i] += idf * tf[term] * (K1 + 1) / (tf[term] + norm)
    return scores


class MiniSearch(SearchBackend):
    name = "minisearch"
    filters = True  # query.filter applies to the scope before scoring (goclaw_search.facets)

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.source: IndexSource | None = None

    def open(self, source: IndexSource) -> None:
        self.source = source

    # ------------------------------------------------------------------ storage
    def _file(self, agent_id: str) -> Path:
        return self.folder / (hashlib.sha256(agent_id.encode()).hexdigest()[:32] + ".json")

    def _load(self, agent_id: str) -> Index:
        try:
            data: Index = json.loads(self._file(agent_id).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {"version": "", "space": None, "chunks": {}}
        return data

    def _save(self, agent_id: str, data: Index) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, self._file(agent_id))  # atomic: a reader sees the old or the new file

    def _current(self, agent_id: str, space: Space | None) -> Index:
        """The agent's index, caught up with the source when it is behind or in another space."""
        assert self.source is not None, "open() first"
        data = self._load(agent_id)
        version = self.source.version(agent_id)
        want: list[Any] | None = list(space) if space is not None else data["space"]
        if data["version"] == version and data["space"] == want:
            return data
        keep = data["chunks"] if data["space"] == want else {}
        have = {int(i): _fingerprint(c) for i, c in keep.items()}
        in_space: Space | None = (want[0], want[1], int(want[2])) if want else None
        wanted = self.source.fingerprints(agent_id, in_space)
        chunks = {str(i): keep[str(i)] for i, fp in wanted.items() if have.get(i) == fp}
        missing = [i for i in wanted if str(i) not in chunks]
        for rec in self.source.records(agent_id, missing, in_space):
            chunks[str(rec.id)] = _entry(rec)
        data = {"version": version, "space": want, "chunks": chunks}
        self._save(agent_id, data)
        return data

    # ------------------------------------------------------------------ writes
    def apply_changes(self, changes: IndexChanges) -> None:
        if not changes.removed and not changes.records:
            return
        data = self._load(changes.agent_id)
        space = data["space"] if data["chunks"] else (list(changes.space) if changes.space else None)
        fits = all(r.vector is None or list(r.space or ()) == space for r in changes.records.values())
        if changes.complete and data["version"] == changes.version_before and fits:
            for i in changes.removed:
                data["chunks"].pop(str(i), None)
            for rec in changes.records.values():
                data["chunks"][str(rec.id)] = _entry(rec)
            data.update(version=changes.version_after, space=space)
            self._save(changes.agent_id, data)
        else:  # another writer came in between, or the embedding space changed: catch up
            self._current(changes.agent_id, changes.space)

    def invalidate(self, agent_id: str | None = None) -> None:
        files = [self._file(agent_id)] if agent_id is not None else list(self.folder.glob("*.json"))
        for path in files:
            path.unlink(missing_ok=True)  # rebuilt from the source by the next search

    # ------------------------------------------------------------------ reads
    def search(self, query: SearchQuery) -> SearchResult:
        data = self._current(query.agent_id, query.space)
        chunks, notes = data["chunks"], []
        scope = {
            i
            for i, c in chunks.items()
            if c["user"] in query.users and matches(query.filter, c["user"], c["path"], c["text"])
        }
        lexical = vector = None
        if query.channel in ("hybrid", "lexical") and query.terms:
            lexical = {i: s for i, s in _bm25(chunks, query.terms).items() if i in scope}
        if query.channel in ("hybrid", "vector") and query.vector is not None:
            qvec = [float(x) for x in query.vector]
            vector = {i: _cosine(chunks[i]["vector"], qvec) for i in scope if chunks[i]["vector"]}
            if not vector:
                vector = None
                space = "{}/{} ({}-d)".format(*query.space) if query.space else "the embedder"
                notes.append(
                    f"no indexed chunk has a vector from {space}; run `goclaw memory index` to embed them"
                )
        if query.fusion.method != "weighted":
            notes.append(f"minisearch fuses by the weighted formula only (not {query.fusion.method!r})")
        best = max(lexical.values(), default=0.0) if lexical else 0.0
        has_lex, has_vec = best > 0, vector is not None and max(vector.values()) > 0
        f = query.fusion
        tw, vw = (f.text_weight, f.vector_weight) if has_lex and has_vec else (float(has_lex), float(has_vec))
        scored = []
        for i in scope:
            lex = lexical[i] / best if lexical is not None and best > 0 else None
            cos = vector.get(i, 0.0) if vector is not None else None
            score = tw * (lex or 0.0) + vw * (cos or 0.0)
            if chunks[i]["user"]:
                score *= f.user_boost
            if score > 0:
                scored.append(ScoredChunk(int(i), score, lex, cos))
        scored.sort(key=lambda c: (-c.score, c.id))
        return SearchResult(scored[: query.wanted], notes)

    def rows(self, agent_id: str, ids: Sequence[int]) -> dict[int, ChunkRow]:
        chunks = self._load(agent_id)["chunks"]
        out = {}
        for i in ids:
            if (c := chunks.get(str(i))) is not None:
                lines = c["lines"]
                out[int(i)] = ChunkRow(
                    int(i), c["user"], c["path"], lines[0], lines[1], c["text"], c["terms"]
                )
        return out


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    return MiniSearchSettings


@hookimpl
def goclaw_search_backends() -> dict[str, Any]:
    def make(engine: Any) -> MiniSearch:
        folder = Path(engine.plugin_settings("minisearch").path).expanduser()
        return MiniSearch(folder if folder.is_absolute() else engine.workspace / folder)

    return {"minisearch": make}
