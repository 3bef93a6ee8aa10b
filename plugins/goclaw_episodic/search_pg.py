"""Episodic search on PostgreSQL (see :mod:`goclaw_episodic.search` for the design).

Full text stays in the database (``tsv`` generated from ``lex``, GIN). A gate checks the agent's
tenant and that it has summaries; then one statement finds the best candidates of either
channel among the caller's summaries (full-text matches ranked by how many query terms they
hold, which is the text score; nearest by cosine), with each candidate's terms and real cosine;
the scores (:mod:`goclaw.retrieval.answer`) are computed here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy import text

from goclaw.retrieval.answer import coverage, fuse_absolute
from goclaw.retrieval.tokenize import query_terms
from goclaw.store.types import utcnow
from goclaw_episodic.terms import Space, episode_lex, topics

_LIVE = "agent_id = :a AND (expires_at IS NULL OR expires_at > :now)"


def search_pg(
    searcher: Any, agent_id: str, scope: list[str], query: str, limit: int, vector_query: str | None
) -> list[tuple[str, float]]:
    """``[(episodic id, fused score)]`` best first for one agent's summaries visible to ``scope``."""
    with searcher.engine.db.engine.connect() as c:
        if not _has_summaries(c, searcher, agent_id):
            return []
        qvec, space = searcher._query_vector(query, vector_query)
        terms = list(dict.fromkeys(query_terms(query)))
        if not terms and qvec is None:
            return []
        params: dict[str, Any] = {"a": agent_id, "users": scope, "now": utcnow(), "k": max(limit * 4, 20)}
        found = c.execute(text(_statement(terms, qvec, space, params)), params).all()
    found = list({str(r[0]): r for r in found}.values())  # a row both channels found, once
    if not found:
        return []
    return _score(found, terms, "qv" in params, limit)


def _has_summaries(c: Any, searcher: Any, agent_id: str) -> bool:
    """The gate: whether the agent is of this engine's tenant and has any summary."""
    gate = c.execute(
        text(
            "SELECT (SELECT tenant_id FROM agents WHERE id = :a), "
            "EXISTS (SELECT 1 FROM episodic_summaries WHERE agent_id = :a)"
        ),
        {"a": agent_id},
    ).first()
    return gate is not None and gate[0] == searcher.tenant and bool(gate[1])


def _statement(terms: Sequence[str], qvec: Any, space: Space | None, params: dict[str, Any]) -> str:
    """The one candidate statement (and its parameters, added to ``params``): the union of the
    channels' candidates, each with ``id, lex, summary, l0_abstract, key_topics, cos``."""
    cosine = "NULL::float8"
    channels = []
    if terms:
        params["q"] = _tsquery(terms)
        held = []
        for j, t in enumerate(terms):
            params[f"t{j}"] = _tsquery([t])
            held.append(f"(tsv @@ CAST(:t{j} AS tsquery))::int")
        # Full-text candidates ranked by the number of query terms they hold: the text score.
        channels.append(
            f"(SELECT id FROM episodic_summaries WHERE {_LIVE} AND user_id = ANY(:users) "
            f"AND tsv @@ CAST(:q AS tsquery) ORDER BY {' + '.join(held)} DESC, id LIMIT :k)"
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
        f"WITH cand AS MATERIALIZED ({' UNION '.join(channels)}) "
        f"SELECT e.id, e.lex, e.summary, e.l0_abstract, e.key_topics, {cosine} AS cos "
        "FROM episodic_summaries e JOIN cand USING (id)"
    )


def _score(found: list[Any], terms: Sequence[str], has_vector: bool, limit: int) -> list[tuple[str, float]]:
    """Every candidate of either channel has both real scores (issue 11): the share of the
    query terms it holds and the cosine, fused 0.7 / 0.3 (:mod:`goclaw.retrieval.answer`)."""
    order = [str(r[0]) for r in found]
    lexical = None
    if terms:
        stored = [r[1] if r[1] is not None else episode_lex(r[2], r[3], topics(r[4])) for r in found]
        docs = [set(lex.split()) for lex in stored]
        lexical = coverage([[t in d for d in docs] for t in terms])
    vector = None
    if has_vector:
        vector = np.asarray([0.0 if r[5] is None else float(r[5]) for r in found], dtype=np.float32)
    return [(order[slot], score) for slot, score in fuse_absolute(lexical, vector, None, limit)]


def _tsquery(terms: Sequence[str]) -> str:
    """A ``tsquery`` literal of these exact lexemes, OR-ed (cast, never parsed)."""
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)
