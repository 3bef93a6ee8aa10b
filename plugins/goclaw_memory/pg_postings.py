"""Impact-ordered postings of the ``postgresql`` backend: from them alone the database bounds
each chunk's BM25 for a query, so a full-text top ``k`` reads only the chunks that can reach
it, and a common term's long list can be read down to an impact instead of to its end.

``memory_postings`` holds one row per (term, chunk) with the term's *impact* in that chunk:
the BM25 term-frequency factor ``tf / (tf + k1 (1 - b + b dl / ref))`` (``dl`` the chunk's
length in terms), computed with a reference mean length ``ref`` fixed per agent
(``memory_postings_ref``: the mean length of the agent's first written chunks), so an impact
never changes once written. A term is its id in the agent's dictionary (``memory_terms``: one
id per agent and term), so a row is 16 bytes of keys (integer term, ``real`` impact, chunk)
instead of the agent id and the term's text; a btree on (term, impact DESC, chunk) serves each
list in impact order. Kept by the statistics triggers (:mod:`goclaw_memory.pg_stats`) in the
transaction that writes the chunks. A dictionary row goes when its term leaves the agent's
statistics (:func:`goclaw_memory.pg_stats.fold`): a writer holds the agent's advisory lock
:data:`TERMS_LOCK` shared until it commits, and the fold deletes only under the exclusive one,
so no posting is written for an id being deleted.

The real factor uses the agent's *current* mean length ``avgdl``. With ``ρ = min(1, ref /
avgdl)``, ``k1 (1 - b + b dl / avgdl) >= ρ k1 (1 - b + b dl / ref)``, so a chunk whose stored
impact is at most ``i`` has a real factor of at most ``1 / (1 + ρ (1 / i - 1))``
(:func:`factor_bound`): the impact of the last row read bounds every row below it, whatever the
agent's length became (tighter the closer ``avgdl`` stays to ``ref``; ``goclaw memory doctor
--repair`` recomputes everything with the current mean).
"""

from __future__ import annotations

from goclaw_memory.pg_text import K1, B
from goclaw_memory.tables import pg_stats_ddl

POSTINGS_TABLES = pg_stats_ddl("memory_terms", "memory_postings", "memory_postings_ref")
TERMS_LOCK = 0x60C1A6  # with hashtext(agent id): pg_advisory_xact_lock(int, int)

# Per chunk of (ids, agents, lexes): its length and each term's frequency.
_PER_TERM = (
    "SELECT r.id, r.agent, t.term, count(*)::float8 AS tf, max(r.dl)::float8 AS dl FROM ("
    "SELECT x.id, x.agent, x.lex, cardinality(array_remove(string_to_array(coalesce(x.lex, ''), ' '), '')) "
    "AS dl FROM {rows}) AS r, unnest(string_to_array(coalesce(r.lex, ''), ' ')) AS t(term) "
    "WHERE t.term <> '' GROUP BY r.id, r.agent, t.term"
)
_IMPACT = f"p.tf / (p.tf + {K1} * (1 - {B} + {B} * p.dl / f.avgdl))"
# The terms of (agents, lexes) the dictionary lacks (only those: a conflicting insert would
# still draw an id from the sequence), in order: two writers adding the same new terms wait
# for each other's in one order, never each for the other's (a deadlock).
_TERMS = (
    "INSERT INTO memory_terms (agent_id, term) SELECT DISTINCT x.agent, t.term FROM {rows}, "
    "unnest(string_to_array(coalesce(x.lex, ''), ' ')) AS t(term) WHERE t.term <> '' AND NOT EXISTS "
    "(SELECT 1 FROM memory_terms d WHERE d.agent_id = x.agent AND d.term = t.term) "
    "ORDER BY 1, 2 ON CONFLICT (agent_id, term) DO NOTHING"
)
_POSTINGS = (
    "INSERT INTO memory_postings (term_id, impact, chunk_id) SELECT d.id, {impact}, p.id "
    "FROM ({per_term}) AS p JOIN memory_postings_ref f ON f.agent_id = p.agent "
    "JOIN memory_terms d ON d.agent_id = p.agent AND d.term = p.term"
)
_REF = (
    "INSERT INTO memory_postings_ref (agent_id, avgdl) SELECT agent, greatest(1, avg(cardinality("
    "array_remove(string_to_array(coalesce(lex, ''), ' '), '')))) FROM {rows} GROUP BY agent "
    "ON CONFLICT (agent_id) DO NOTHING"
)

_AGENT_LEXES = "unnest(agents, lexes) AS x(agent, lex)"
_ID_AGENT_LEXES = "unnest(ids, agents, lexes) AS x(id, agent, lex)"
POSTINGS_APPLY = f"""
CREATE OR REPLACE FUNCTION memory_postings_apply(ids bigint[], agents text[], lexes text[], sign integer)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF ids IS NULL OR cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    IF sign < 0 THEN
        DELETE FROM memory_postings WHERE chunk_id = ANY(ids);
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock_shared({TERMS_LOCK}, hashtext(a))
        FROM (SELECT DISTINCT unnest(agents)) AS g(a);
    {_REF.format(rows=_AGENT_LEXES)};
    {_TERMS.format(rows=_AGENT_LEXES)};
    {_POSTINGS.format(impact=_IMPACT, per_term=_PER_TERM.format(rows=_ID_AGENT_LEXES))};
END $$;
"""

_CHUNKS = "(SELECT id, agent_id AS agent, lex FROM memory_chunks) AS x"
POSTINGS_BACKFILL = (
    _REF.format(rows=_CHUNKS),
    _TERMS.format(rows=_CHUNKS),
    _POSTINGS.format(impact=_IMPACT, per_term=_PER_TERM.format(rows=_CHUNKS)),
)

# The ``:lim`` chunks of highest BM25 bound over the query's terms, best first, each with that
# bound; the first ``:top`` with their user, terms and (in a hybrid search) cosine when in the
# search's scope and not read yet. Every chunk not among the ``:lim`` has a BM25 of at most the
# lowest bound returned. The bounds: :func:`top_sql`; for a query of one term, its list's first
# rows in the index's order (``:t``, ``:w`` arrays of one).
_TOP = (
    "WITH s AS MATERIALIZED (SELECT b.chunk_id, b.ub, row_number() OVER (ORDER BY b.ub DESC, b.chunk_id) "
    "AS n FROM ({bounds}) AS b) SELECT s.n, s.chunk_id, s.ub, NULL, NULL, NULL FROM s UNION ALL "
    "SELECT 0, c.id, NULL, c.user_id, c.lex, {{cos}} FROM s JOIN memory_chunks c ON c.id = s.chunk_id "
    "AND c.agent_id = :a AND c.user_id = ANY(:users) AND c.id <> ALL(:seen){{only}} WHERE s.n <= :top"
)
# A ``real`` impact is within a relative 6e-8 of the computed one: the bounds allow 1e-6.
_FACTOR = "1 / (1 + :rho * (1 / p.impact::float8 - 1))"  # factor_bound; p.impact when rho is 1
TOP_ONE = _TOP.format(
    bounds=f"SELECT p.chunk_id, (CAST(:w AS float8[]))[1] * {_FACTOR} * (1 + 1e-6) AS ub "
    "FROM memory_postings p WHERE p.term_id = (CAST(:t AS int[]))[1] "
    "ORDER BY p.impact DESC, p.chunk_id LIMIT :lim"
)


def top_sql(lists: int, rho_one: bool) -> str:
    """:data:`TOP_ONE` for ``lists`` terms, list ``i`` read down to impact ``:c{i}``: a row
    bounds its term's part by ``:w{i}`` × :func:`factor_bound` (``:rho`` as there), less
    ``:tau{i}``, the part of the list's unread rows already in ``:tcut`` (what the unread rows
    of all lists add at most). One index scan per list, no join: the aggregation of tens of
    thousands of rows is most of a search's time."""
    factor = "p.impact" if rho_one else _FACTOR
    branches = " UNION ALL ".join(
        f"SELECT p.chunk_id, :w{i} * {factor} - :tau{i} AS b FROM memory_postings p "
        f"WHERE p.term_id = :t{i} AND p.impact >= :c{i}"
        for i in range(lists)
    )
    if not branches:  # every list cut whole: no chunk is bounded above :tcut
        return _TOP.format(bounds="SELECT 0::bigint AS chunk_id, 0::float8 AS ub WHERE false")
    return _TOP.format(
        bounds=f"SELECT x.chunk_id, (sum(x.b) + :tcut) * (1 + 1e-6) AS ub FROM ({branches}) AS x "
        "GROUP BY x.chunk_id ORDER BY ub DESC, x.chunk_id LIMIT :lim"
    )


# Chunks by id, as TOP returns its first ones.
FETCH = (
    "SELECT c.id, c.user_id, c.lex, {cos} FROM memory_chunks c WHERE c.agent_id = :a "
    "AND c.id = ANY(:ids) AND c.user_id = ANY(:users){only}"
)


def factor_bound(impact: float, rho: float) -> float:
    """The most a row whose stored impact is at most ``impact`` can have as its real BM25
    term-frequency factor, with ``rho = min(1, ref / avgdl)`` (the module docstring)."""
    if impact <= 0:
        return 0.0
    return (1.0 / (1.0 + rho * (1.0 / impact - 1.0))) * (1 + 1e-6)  # an impact is stored as real
