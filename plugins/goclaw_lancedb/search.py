"""One hybrid search over an agent's LanceDB table (see :mod:`goclaw_lancedb.backend`).

1. LanceDB full-text search (its BM25 over the ``terms`` column) and LanceDB flat cosine
   search, each limited to the query's scope by a ``where`` prefilter, top ``k`` each;
2. every candidate gets its real score on both channels: the full-text hits come back with
   their stored vectors (their cosines are computed here), the vector hits missing from the
   full-text list get their BM25 from a second full-text query filtered to those ids (0: no
   term matches); chunks without a vector of the space score 0 on the vector channel;
3. :func:`goclaw_search.fusion.fuse` over the candidates, with ``query.fusion`` and the
   user boost. The rank-based methods see each channel's top ``pool``, as over every chunk.
   For ``weighted`` no chunk outside both lists can score above
   ``tw · bm25_k / best + vw · cos_k`` (× boost): when the last result scores below that
   bound, ``k`` grows ×4 and the search repeats, so the result is exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from goclaw.contracts.search import ChunkRow, ScoredChunk, SearchQuery, Space
from goclaw_lancedb.store import id_list, lit
from goclaw_search.facets import matches, needs_text
from goclaw_search.fusion import fuse

Hits = dict[int, tuple[float, str]]  # id -> (channel score, user id)
ROW_COLS = ["id", "user_id", "path", "start_line", "end_line", "text"]


def no_vectors_note(space: Space | None) -> str:
    where = f"{space[0]}/{space[1]} ({space[2]}-d)" if space else "the configured embedder"
    return (
        f"no indexed chunk has a vector from {where} (the embedding provider changed, or indexing "
        "ran without it); run `goclaw memory index` to embed them; full-text results only"
    )


def _collect(
    data: Any, score: str, rows: dict[int, ChunkRow], cosine: bool = False, cos_out: Any = None
) -> Hits:
    """Channel scores by id; the rows come along (the service asks for the winners' rows next).
    ``cos_out`` (query vector, dict): also each row's cosine, from its stored vector."""
    out: Hits = {}
    for r in data.to_pylist():
        cid = int(r["id"])
        out[cid] = (1.0 - float(r[score]) if cosine else float(r[score]), r["user_id"])
        user, path, text = r["user_id"], r["path"], r["text"]
        rows[cid] = ChunkRow(cid, user, path, int(r["start_line"]), int(r["end_line"]), text)
    if cos_out is not None and data.num_rows:
        qvec, found = cos_out
        mat = np.asarray(data["vector"].combine_chunks().flatten(), dtype=np.float32).reshape(
            data.num_rows, -1
        )
        norms = np.linalg.norm(mat, axis=1) * float(np.linalg.norm(qvec))
        cosines = np.where(norms > 0, mat @ qvec / np.where(norms > 0, norms, 1.0), 0.0)
        has = data["has_vector"].to_pylist()
        for cid, c, h in zip(data["id"].to_pylist(), cosines.tolist(), has, strict=True):
            found[int(cid)] = float(c) if h else 0.0
    return out


def _fts(
    table: Any, terms: list[str], where: str, k: int, rows: dict[int, ChunkRow], cos_out: Any = None
) -> Hits:
    """Full-text top ``k``; with ``cos_out`` (query vector, dict) also each hit's cosine, so the
    vector channel needs no second query for the full-text candidates."""
    from lancedb.query import MatchQuery

    cols = [*ROW_COLS, "_score", *(["vector", "has_vector"] if cos_out is not None else [])]
    q = table.search(MatchQuery(" ".join(terms), "terms"), query_type="fts")
    data = q.where(where, prefilter=True).limit(k).select(cols).to_arrow()
    return _collect(data, "_score", rows, cos_out=cos_out)


def _knn(table: Any, vec: Any, where: str, k: int, rows: dict[int, ChunkRow]) -> Hits:
    q = table.search(vec, vector_column_name="vector").distance_type("cosine").bypass_vector_index()
    data = q.where(f"({where}) AND has_vector", prefilter=True).limit(k)
    return _collect(data.select([*ROW_COLS, "_distance"]).to_arrow(), "_distance", rows, cosine=True)


def search_table(
    table: Any, space: Space | None, query: SearchQuery, total: int, rows: dict[int, ChunkRow]
) -> tuple[list[ScoredChunk], list[str]]:
    """The best ``query.wanted`` chunks of the query's scope (of ``total`` rows in the
    table), and notes; ``rows`` receives the rows of the chunks it saw."""
    notes: list[str] = []
    scope = f"agent_id = {lit(query.agent_id)} AND user_id IN ({', '.join(lit(u) for u in query.users)})"
    if query.filter is not None:  # narrowed to the chunks it lets through, before either channel
        allowed = _allowed(table, scope, query.filter, total)
        if not allowed:
            return [], notes
        scope += f" AND id IN ({id_list(allowed)})"
    terms = list(dict.fromkeys(query.terms))
    want_lex = query.channel in ("hybrid", "lexical") and bool(terms)
    vec = None
    if query.channel in ("hybrid", "vector") and query.vector is not None:
        vec = np.asarray(query.vector, dtype=np.float32).reshape(-1)
        if query.space is None or query.space != space or not np.linalg.norm(vec) > 0:
            notes.append(no_vectors_note(query.space))
            vec = None
    if not want_lex and vec is None:
        return [], notes
    limit = query.wanted
    pool = max(50, 5 * limit)
    k = pool
    while True:
        lex_cos: dict[int, float] = {}  # the full-text hits' cosines
        cos = _knn(table, vec, scope, k, rows) if vec is not None else {}
        if vec is not None and not cos:  # no chunk of the scope has a vector of this space
            notes.append(no_vectors_note(query.space))
            vec = None
        cos_out = (vec, lex_cos) if vec is not None else None
        lex = _fts(table, terms, scope, k, rows, cos_out) if want_lex else {}
        chunks, exact = _fuse(table, query, scope, terms, (vec, lex_cos), lex, cos, (k, limit, pool), rows)
        if exact or k >= total:
            return chunks, notes
        k *= 4


def _allowed(table: Any, scope: str, flt: Any, total: int) -> list[int]:
    """The ids of the scope's chunks that ``flt`` lets through (:mod:`goclaw_search.facets`)."""
    cols = ["id", "user_id", "path", *(["text"] if needs_text(flt) else [])]
    data = table.search().where(scope, prefilter=True).select(cols).limit(max(total, 1)).to_arrow()
    texts = data["text"].to_pylist() if "text" in cols else [None] * data.num_rows
    rows = zip(
        data["id"].to_pylist(), data["user_id"].to_pylist(), data["path"].to_pylist(), texts, strict=True
    )
    return [int(i) for i, u, p, t in rows if matches(flt, u, p, t)]


def _fuse(
    table: Any,
    query: SearchQuery,
    scope: str,
    terms: list[str],
    vectors: tuple[Any, dict[int, float]],
    lex: Hits,
    cos: Hits,
    sizes: tuple[int, int, int],
    rows: dict[int, ChunkRow],
) -> tuple[list[ScoredChunk], bool]:
    """Complete both channels' scores for every candidate and fuse; ``exact``: whether no
    chunk outside the candidates can enter the result."""
    k, limit, pool = sizes
    vec, lex_cos = vectors
    lex_full, vec_full = len(lex) < k, len(cos) < k  # the channel returned every match
    lex_k = min((s for s, _u in lex.values()), default=0.0)
    cos_k = max(0.0, min((s for s, _u in cos.values()), default=0.0))
    cand = sorted(lex.keys() | cos.keys())
    if not cand:
        return [], True
    lex_all, cos_all = dict(lex), dict(cos)
    if lex and (extra := [i for i in cand if i not in lex]):
        lex_all.update(_fts(table, terms, f"{scope} AND id IN ({id_list(extra)})", len(extra), rows))
    if vec is not None:  # the full-text candidates' cosines came with them
        cos_all.update({i: (lex_cos[i], lex[i][1]) for i in cand if i not in cos and i in lex_cos})
    users = {i: u for hits in (lex_all, cos_all) for i, (_s, u) in hits.items()}
    lexical = np.array([lex_all.get(i, (0.0, ""))[0] for i in cand], dtype=np.float32) if lex else None
    vector = np.array([cos_all.get(i, (0.0, ""))[0] for i in cand], dtype=np.float32) if cos else None
    f = query.fusion
    boost = None
    if f.user_boost != 1.0 and any(users[i] for i in cand):
        boost = np.array([f.user_boost if users[i] else 1.0 for i in cand], dtype=np.float32)
    scored = fuse(
        lexical,
        vector,
        None,
        limit=limit,
        method=f.method,
        text_weight=f.text_weight,
        vector_weight=f.vector_weight,
        boost=boost,
        pool=pool,
    )
    chunks = [ScoredChunk(cand[s.slot], s.score, s.lexical, s.vector) for s in scored]
    if f.method != "weighted" or (lex_full and vec_full):
        return chunks, True
    has_lex = lexical is not None and bool((lexical > 0).any())
    has_vec = vector is not None and bool((vector > 0).any())
    tw, vw = (
        (f.text_weight, f.vector_weight) if has_lex and has_vec else ((1.0, 0.0) if has_lex else (0.0, 1.0))
    )
    best = float(lexical.max()) if has_lex and lexical is not None else 0.0
    bound = (tw * lex_k / best if best > 0 and not lex_full else 0.0) + (vw * cos_k if not vec_full else 0.0)
    if f.user_boost > 1.0 and any(query.users):
        bound *= f.user_boost
    if bound <= 0:
        return chunks, True
    return chunks, len(chunks) >= limit and chunks[limit - 1].score >= bound
