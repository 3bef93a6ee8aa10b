"""Episodic search on PostgreSQL (see :mod:`goclaw_episodic.search` for the design).

Full text stays in the database (``tsv`` generated from ``lex``, GIN). A gate reads the agent's
tenant and a change token of its summaries; the live summary count and mean length are cached
per token. Then one statement finds the best candidates of either channel among the caller's
summaries (full-text matches pre-ranked by the IDF of the terms they hold; nearest by cosine),
with each candidate's terms and real cosine and the query terms' document frequencies; BM25 and
fusion run here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy import text

from goclaw.retrieval.fusion import fuse
from goclaw.retrieval.tokenize import query_terms
from goclaw.store.types import utcnow
from goclaw_episodic.terms import TEXT_WEIGHT, VECTOR_WEIGHT, Space, covered_bm25, episode_lex, topics

_LIVE = "agent_id = :a AND (expires_at IS NULL OR expires_at > :now)"


def search_pg(
    searcher: Any, agent_id: str, scope: list[str], query: str, limit: int, vector_query: str | None
) -> list[tuple[str, float]]:
    """``[(episodic id, fused score)]`` best first for one agent's summaries visible to ``scope``."""
    now = utcnow()
    with searcher.engine.db.engine.connect() as c:
        sizes = _live_sizes(c, searcher, agent_id, now)
        if sizes is None:
            return []
        qvec, space = searcher._query_vector(query, vector_query)
        terms = query_terms(query)
        if not terms and qvec is None:
            return []
        params: dict[str, Any] = {"a": agent_id, "users": scope, "now": now, "k": max(limit * 4, 20)}
        params["n"] = sizes[0]
        found = c.execute(text(_statement(terms, qvec, space, params)), params).all()
    found = list({str(r[0]): r for r in found}.values())  # a row both channels found, once
    if not found:
        return []
    return _score(found, terms, sizes, "qv" in params, limit)


def _live_sizes(c: Any, searcher: Any, agent_id: str, now: Any) -> tuple[float, float] | None:
    """The gate: ``None`` for an agent of another tenant or without summaries; else the live
    summary count and mean term count, cached per change token (count, newest, id sum) until
    the earliest expiry passes."""
    gate = c.execute(
        text(
            "SELECT (SELECT tenant_id FROM agents WHERE id = :a), count(*), max(created_at), "
            "sum(length(id)) FROM episodic_summaries WHERE agent_id = :a"
        ),
        {"a": agent_id},
    ).first()
    if gate is None or gate[0] != searcher.tenant or not gate[1]:
        return None
    token = (int(gate[1]), gate[2], gate[3])
    cached = searcher._pg_sizes.get(agent_id)
    if cached is None or cached[0] != token or (cached[3] is not None and now >= cached[3]):
        row = c.execute(
            text(
                "SELECT count(*), coalesce(avg(CASE WHEN coalesce(lex, '') = '' THEN 0 ELSE "
                "length(lex) - length(replace(lex, ' ', '')) + 1 END), 0), min(expires_at) "
                f"FROM episodic_summaries WHERE {_LIVE}"
            ),
            {"a": agent_id, "now": now},
        ).first()
        assert row is not None
        cached = (token, float(row[0]), float(row[1]), row[2])
        searcher._pg_sizes[agent_id] = cached
    return cached[1], cached[2]


def _statement(terms: Sequence[str], qvec: Any, space: Space | None, params: dict[str, Any]) -> str:
    """The one candidate statement (and its parameters, added to ``params``): the union of the
    channels' candidates, each with ``id, lex, summary, l0_abstract, key_topics, cos`` and then
    the document frequency of every query term."""
    cosine = "NULL::float8"
    channels, df, weight = [], [], []
    if terms:
        params["q"] = _tsquery(terms)
        for j, t in enumerate(terms):
            params[f"t{j}"] = _tsquery([t])
            df.append(
                f"(SELECT count(*) FROM episodic_summaries WHERE {_LIVE} "
                f"AND tsv @@ CAST(:t{j} AS tsquery)) AS df{j}"
            )
            weight.append(
                f"(tsv @@ CAST(:t{j} AS tsquery))::int * ln(1 + (:n - df{j} + 0.5) / (df{j} + 0.5))"
            )
        # Full-text candidates pre-ranked by the IDF of the query terms they hold (close to
        # BM25, no ts_rank per row); BM25 proper is computed in _score.
        channels.append(
            f"(SELECT id FROM episodic_summaries, stats WHERE {_LIVE} AND user_id = ANY(:users) "
            f"AND tsv @@ CAST(:q AS tsquery) ORDER BY {' + '.join(weight)} DESC, id LIMIT :k)"
        )
    if qvec is not None and space is not None:
        dim = int(space[2])
        literal = "[" + ",".join(f"{x:.7g}" for x in np.asarray(qvec).tolist()) + "]"
        params.update(qv=literal, p=space[0], m=space[1])
        same_space = f"embedding_dim = {dim} AND embedding_provider = :p AND embedding_model = :m"
        distance = f"embedding::vector({dim}) <=> CAST(:qv AS vector({dim}))"
        cosine = f"CASE WHEN {same_space} THEN 1 - ({distance}) END"
        channels.append(
            f"(SELECT id FROM episodic_summaries WHERE {_LIVE} AND user_id = ANY(:users) AND {same_space} "
            f"ORDER BY {distance} LIMIT :k)"
        )
    return (
        f"WITH stats AS MATERIALIZED (SELECT {', '.join(df) or '0 AS none'}), "
        f"cand AS MATERIALIZED ({' UNION '.join(channels)}) "
        f"SELECT e.id, e.lex, e.summary, e.l0_abstract, e.key_topics, {cosine} AS cos, s.* "
        "FROM episodic_summaries e JOIN cand USING (id) CROSS JOIN stats AS s"
    )


def _score(
    found: list[Any], terms: Sequence[str], sizes: tuple[float, float], has_vector: bool, limit: int
) -> list[tuple[str, float]]:
    """Every candidate of either channel has both real scores (issue 11), fused 0.7 / 0.3."""
    order = [str(r[0]) for r in found]
    lexical = None
    if terms:
        n, avgdl = sizes
        idf = [math.log(1.0 + (n - float(d) + 0.5) / (float(d) + 0.5)) for d in found[0][6:]]
        docs = [(r[1] if r[1] is not None else episode_lex(r[2], r[3], topics(r[4]))).split() for r in found]
        lexical = np.asarray([covered_bm25(d, terms, idf, avgdl) for d in docs], dtype=np.float32)
    vector = None
    if has_vector:
        vector = np.asarray([0.0 if r[5] is None else float(r[5]) for r in found], dtype=np.float32)
    scored = fuse(lexical, vector, None, limit=limit, text_weight=TEXT_WEIGHT, vector_weight=VECTOR_WEIGHT)
    return [(order[s.slot], s.score) for s in scored]


def _tsquery(terms: Sequence[str]) -> str:
    """A ``tsquery`` literal of these exact lexemes, OR-ed (cast, never parsed)."""
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)
