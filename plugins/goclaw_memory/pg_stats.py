"""The per-agent BM25 statistics of the ``postgresql`` backend: their tables and the triggers
that keep them (:mod:`goclaw_memory.pg_exact` reads them).

``memory_agent_stats`` (agent, chunks, terms: the sum of chunk lengths) and
``memory_term_stats`` (agent, term, df, max_tf) hold *deltas*: statement-level triggers on
``memory_chunks`` append one row per (agent, term) a statement changes, in the transaction that
writes the chunks, whatever writes them (indexing, adds, forget, a cascade from a deleted
document or agent). A reader sums an agent's rows. Appending, not updating counters in place:
a counter row updated by every statement of a long transaction grows a chain of row versions
that each later update walks (quadratic), and concurrent writers of one agent would queue on
its hottest rows. :func:`compact_sql` folds the rows of an agent (or of some of its terms) into
one each, after index runs. ``max_tf`` is an upper bound for pruning (a removal never lowers
it), never a count. The same triggers keep the packed postings
(:mod:`goclaw_memory.pg_postings`). Installed, with a count of every chunk (:func:`install`),
only where the ``postgresql`` backend runs: at its first use, or by ``goclaw memory doctor
--repair``; writes under other backends do not pay for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from goclaw_memory.pg_postings import (
    POSTINGS_APPLY,
    POSTINGS_BACKFILL,
    POSTINGS_STORAGE,
    POSTINGS_TABLE_NAMES,
    POSTINGS_TABLES,
)
from goclaw_memory.tables import PG_STATS_TABLES, pg_stats_ddl

TABLES = pg_stats_ddl("memory_agent_stats", "memory_term_stats")
SKETCHES_TABLE = pg_stats_ddl("memory_sketches")  # the trigger deletes from it
TRIGGER_NAMES = ("memory_chunks_stats_insert", "memory_chunks_stats_delete", "memory_chunks_stats_update")

# One function appends a signed batch: (agent ids, lex strings) counted +1 or -1.
APPLY = """
CREATE OR REPLACE FUNCTION memory_stats_apply(agents text[], lexes text[], sign integer)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF agents IS NULL OR cardinality(agents) = 0 THEN
        RETURN;
    END IF;
    INSERT INTO memory_agent_stats (agent_id, chunks, terms)
    SELECT r.agent, sign * count(*),
           sign * coalesce(sum(cardinality(array_remove(string_to_array(coalesce(r.lex, ''), ' '), ''))), 0)
    FROM unnest(agents, lexes) AS r(agent, lex)
    GROUP BY r.agent;
    INSERT INTO memory_term_stats (agent_id, term, df, max_tf)
    SELECT agent, term, sign * count(*), max(tf)
    FROM (
        SELECT r.agent, t.term, count(*) AS tf
        FROM unnest(agents, lexes) WITH ORDINALITY AS r(agent, lex, n),
             unnest(string_to_array(coalesce(r.lex, ''), ' ')) AS t(term)
        WHERE t.term <> ''
        GROUP BY r.n, r.agent, t.term
    ) AS per_chunk
    GROUP BY agent, term;
END $$;
"""

# The deleted chunks' passage sketches go with them, and a chunk's whose text changes in place
# (goclaw_memory.pg_sketches): no token of an erased text stays there.
_SKETCHES_DELETE = """
        DELETE FROM memory_sketches s USING old_rows o WHERE s.agent_id = o.agent_id AND s.chunk_id = o.id;"""
_SKETCHES_UPDATE = """
        DELETE FROM memory_sketches s USING old_rows o JOIN new_rows n ON n.id = o.id
            WHERE s.agent_id = o.agent_id AND s.chunk_id = o.id AND (o.text IS DISTINCT FROM n.text
            OR o.chunk_hash IS DISTINCT FROM n.chunk_hash OR o.agent_id <> n.agent_id);"""

_TRIGGER = """
CREATE OR REPLACE FUNCTION memory_chunks_stats() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    i bigint[];
    a text[];
    u text[];
    l text[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(id), array_agg(agent_id), array_agg(user_id), array_agg(lex) INTO i, a, u, l
            FROM new_rows;
        PERFORM memory_stats_apply(a, l, 1);
        PERFORM memory_postings_apply(i, a, u, l, 1);
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(id), array_agg(agent_id), array_agg(user_id), array_agg(lex) INTO i, a, u, l
            FROM old_rows;
        PERFORM memory_stats_apply(a, l, -1);
        PERFORM memory_postings_apply(i, a, u, l, -1);{sketches_delete}
    ELSE{sketches_update}
        SELECT array_agg(o.id), array_agg(o.agent_id), array_agg(o.user_id), array_agg(o.lex) INTO i, a, u, l
            FROM old_rows o JOIN new_rows n ON n.id = o.id
            WHERE o.lex IS DISTINCT FROM n.lex OR o.agent_id <> n.agent_id OR o.user_id <> n.user_id;
        PERFORM memory_stats_apply(a, l, -1);
        PERFORM memory_postings_apply(i, a, u, l, -1);
        SELECT array_agg(n.id), array_agg(n.agent_id), array_agg(n.user_id), array_agg(n.lex) INTO i, a, u, l
            FROM old_rows o JOIN new_rows n ON n.id = o.id
            WHERE o.lex IS DISTINCT FROM n.lex OR o.agent_id <> n.agent_id OR o.user_id <> n.user_id;
        PERFORM memory_stats_apply(a, l, 1);
        PERFORM memory_postings_apply(i, a, u, l, 1);
    END IF;
    RETURN NULL;
END $$;
"""


def trigger_sql(sketches: bool = True) -> str:
    """The trigger function; without the sketches' deletes as revisions before ``memory_0008``
    (no ``memory_sketches`` table) installed it."""
    if not sketches:
        return _TRIGGER.format(sketches_delete="", sketches_update="")
    return _TRIGGER.format(sketches_delete=_SKETCHES_DELETE, sketches_update=_SKETCHES_UPDATE)


TRIGGER = trigger_sql()

TRIGGERS = (
    "CREATE TRIGGER memory_chunks_stats_insert AFTER INSERT ON memory_chunks "
    "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_chunks_stats()",
    "CREATE TRIGGER memory_chunks_stats_delete AFTER DELETE ON memory_chunks "
    "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_chunks_stats()",
    "CREATE TRIGGER memory_chunks_stats_update AFTER UPDATE ON memory_chunks "
    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION memory_chunks_stats()",
)

BACKFILL = (
    "INSERT INTO memory_agent_stats (agent_id, chunks, terms) "
    "SELECT agent_id, count(*), coalesce(sum(cardinality(array_remove("
    "string_to_array(coalesce(lex, ''), ' '), ''))), 0) FROM memory_chunks GROUP BY agent_id",
    "INSERT INTO memory_term_stats (agent_id, term, df, max_tf) "
    "SELECT agent_id, term, count(*), max(tf) FROM ("
    "SELECT c.agent_id, t.term, count(*) AS tf FROM memory_chunks c, "
    "unnest(string_to_array(coalesce(c.lex, ''), ' ')) AS t(term) WHERE t.term <> '' "
    "GROUP BY c.id, c.agent_id, t.term) AS per_chunk GROUP BY agent_id, term",
    *POSTINGS_BACKFILL,
)


# A sum of zero goes (no chunk holds the term any more); any other stays, negative too: two
# folds at once each delete the rows their snapshot sees, and a part holding only a deletion's
# -1 must add up with the rest later, not vanish.
COMPACT_TERMS = (
    "WITH gone AS (DELETE FROM memory_term_stats WHERE agent_id = :a{terms} RETURNING term, df, max_tf) "
    "INSERT INTO memory_term_stats (agent_id, term, df, max_tf) "
    "SELECT :a, term, sum(df), max(max_tf) FROM gone GROUP BY term HAVING sum(df) <> 0"
)
COMPACT_AGENT = (
    "WITH gone AS (DELETE FROM memory_agent_stats WHERE agent_id = :a RETURNING chunks, terms) "
    "INSERT INTO memory_agent_stats (agent_id, chunks, terms) "
    "SELECT :a, sum(chunks), sum(terms) FROM gone HAVING sum(chunks) <> 0 OR sum(terms) <> 0"
)


# An index run changing at least this many chunks folds all of the agent's statistics rows.
COMPACT_ALL = 500


def fold(engine: Any, agent_id: str, terms: set[str] | None = None) -> None:
    """Fold the agent's statistics rows (only those of ``terms`` when given) in one transaction:
    one row per term, terms no chunk holds any more deleted (their strings do not outlive the
    text they came from, e.g. after ``goclaw forget``)."""
    from sqlalchemy import text

    fold_terms, fold_agent = compact_sql(terms is not None)
    with engine.db.engine.begin() as c:
        c.execute(text(fold_terms), {"a": agent_id, "t": sorted(terms or ())})
        c.execute(text(fold_agent), {"a": agent_id})


def fold_changes(engine: Any, changes: Any) -> None:
    """After an index run on PostgreSQL, whatever the search backend: fold the rows its writes
    appended (all of the agent's after a large run, else those of the terms it added), so the
    tables stay one row per term instead of growing with every write."""
    if changes.removed or changes.records:
        large = len(changes.removed) + len(changes.records) >= COMPACT_ALL
        terms = None if large else {t for r in changes.records.values() for t in r.terms}
        fold(engine, changes.agent_id, terms)


def compact_sql(some_terms: bool) -> tuple[str, str]:
    """The statements that fold an agent's delta rows into one per term (``:a``; with
    ``some_terms`` only the terms ``:t`` and those of deleted chunks) and one for the agent.
    Rows appended by transactions not yet committed are not in the statement's snapshot: they
    stay, and still add up."""
    # A run's own terms, and the terms of chunks it deleted (their rows count down: df < 0).
    some = (
        " AND (term = ANY(:t) OR term IN (SELECT term FROM memory_term_stats WHERE agent_id = :a AND df < 0))"
    )
    return COMPACT_TERMS.format(terms=some if some_terms else ""), COMPACT_AGENT


# What the postgresql backend's searches read: the chunks and every table declared for it.
SEARCHED_TABLES = ("memory_chunks", *(t.name for t in PG_STATS_TABLES))


def analyze(execute: Callable[[str], Any]) -> None:
    """Fresh planner statistics for :data:`SEARCHED_TABLES`, after they were filled in bulk (a
    load, the install's count). The searches plan each statement once per connection (generic
    plans) and PostgreSQL plans again after an ANALYZE; planned on a never-analyzed table's
    figures, the postings statement scanned it (a freshly loaded 10,000-chunk agent's full-text
    search ~12 ms, not ~1.7). Autovacuum gets there too, a minute or so later."""
    execute(f"ANALYZE {', '.join(SEARCHED_TABLES)}")


def install(execute: Callable[[str], Any]) -> None:
    """Create the tables, functions and triggers (again), and count every chunk afresh, the
    table locked against writes meanwhile (in the caller's transaction)."""
    for sql in OLD_LAYOUT:
        execute(sql)
    for sql in (*TABLES, *SKETCHES_TABLE, *POSTINGS_TABLES, *POSTINGS_STORAGE):
        execute(sql)
    for sql in (APPLY, POSTINGS_APPLY, TRIGGER):
        execute(sql)
    for name in TRIGGER_NAMES:
        execute(f"DROP TRIGGER IF EXISTS {name} ON memory_chunks")
    for sql in TRIGGERS:
        execute(sql)
    # Under the triggers from here on: the counts below and every later write add up.
    execute("LOCK TABLE memory_chunks IN SHARE MODE")
    execute(f"TRUNCATE memory_agent_stats, memory_term_stats, {', '.join(POSTINGS_TABLE_NAMES)}")
    for sql in BACKFILL:
        execute(sql)


def missing_triggers(conn: Any) -> list[str]:
    """The statistics triggers ``memory_chunks`` of the current schema lacks: all of them while
    the packed postings' tables or functions are not there (an older layout is installed again)."""
    from sqlalchemy import text

    rows = conn.execute(
        text(
            "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relname = 'memory_chunks' AND n.nspname = current_schema() "
            "AND to_regclass(quote_ident(n.nspname) || '.memory_packed_agents') IS NOT NULL "
            "AND EXISTS (SELECT 1 FROM pg_proc p "
            "WHERE p.proname = 'memory_postings_apply' AND p.pronargs = 5 AND p.pronamespace = n.oid)"
        )
    )
    installed = {r[0] for r in rows}
    return [n for n in TRIGGER_NAMES if n not in installed]


# What older layouts of the postings left: dropped when the triggers are installed.
OLD_LAYOUT = (
    "DROP FUNCTION IF EXISTS memory_postings_apply(bigint[], text[], text[], integer)",
    "DROP TABLE IF EXISTS memory_postings",
    "DROP TABLE IF EXISTS memory_postings_ref",
    "DROP TABLE IF EXISTS memory_terms",
)


def uninstall(execute: Callable[[str], Any]) -> None:
    for name in TRIGGER_NAMES:
        execute(f"DROP TRIGGER IF EXISTS {name} ON memory_chunks")
    execute("DROP FUNCTION IF EXISTS memory_chunks_stats()")
    execute("DROP FUNCTION IF EXISTS memory_stats_apply(text[], text[], integer)")
    execute("DROP FUNCTION IF EXISTS memory_postings_apply(bigint[], text[], text[], text[], integer)")
    for sql in OLD_LAYOUT:
        execute(sql)
    for name in (*POSTINGS_TABLE_NAMES, "memory_term_stats", "memory_agent_stats"):
        execute(f"DROP TABLE IF EXISTS {name}")
