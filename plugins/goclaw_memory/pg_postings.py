"""Packed postings of the ``postgresql`` backend: every chunk's exact BM25 for a query from a
few rows per query term, scored by the client.

Layout (declared in :data:`goclaw_memory.tables.PG_STATS_TABLES`):

* ``memory_packed``: one row per (agent, term, user): the term's postings as three packed
  arrays in ordinal order: ``ords`` (int32), ``tfs`` (int16, the term's frequency in the chunk,
  counted up to 32,767) and ``lens`` (int32, the chunk's length in terms), big-endian as
  ``int4send``/``int2send`` write them. Stored ``EXTERNAL`` (uncompressed): compression does not
  shrink such arrays and would cost every read. A query's lists arrive in one round trip; numpy
  adds up BM25 per ordinal (:func:`scores`).
* ``memory_ords``: each packed chunk's ordinal in its agent (dense from 0: a per-agent array
  index for the sums), ``memory_packed_agents`` the next one to give.
* ``memory_delta``: the chunks written since the last compaction, one row per (chunk, term)
  with the same three figures, read with the packed rows (aggregated to the same arrays by the
  database).
* ``memory_tombs``: ordinals of deleted packed chunks (with the user and terms they had), scored
  as nothing until the compaction removes them from their lists.

Writes are insert-only and run in the writing transaction, by the statistics triggers
(:mod:`goclaw_memory.pg_stats`) through :data:`POSTINGS_APPLY`: a new chunk adds delta rows; a
deleted one loses its delta rows or, once packed, gives its ordinal up as a tombstone. No row
shared by writers is updated, so writers of one agent neither queue nor deadlock. Each holds
the agent's advisory lock :data:`PACK_LOCK` shared until it commits; :func:`compact` takes it
exclusively without waiting (it skips an agent a writer is in), so it never sees half of a
write: it gives the delta's chunks ordinals, appends their postings to the packed rows (new
ordinals are larger than every packed one, so a list stays in order), drops tombstoned
ordinals from the lists that hold them, and empties the delta and the tombstones, in one
transaction. A search's snapshot sees the state before or after it, never a mixture.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from goclaw_memory.pg_text import K1, B
from goclaw_memory.tables import pg_stats_ddl
from goclaw_search.dense import scatter_add, top_positive

POSTINGS_TABLE_NAMES = (
    "memory_packed",
    "memory_delta",
    "memory_ords",
    "memory_tombs",
    "memory_packed_agents",
)
POSTINGS_TABLES = pg_stats_ddl(*POSTINGS_TABLE_NAMES)
# PostgreSQL only (SQLite has the tables, empty and unused).
POSTINGS_STORAGE = tuple(
    f"ALTER TABLE memory_packed ALTER COLUMN {c} SET STORAGE EXTERNAL" for c in ("ords", "tfs", "lens")
)
PACK_LOCK = 0x60C1A6  # with hashtext(agent id): pg_advisory_xact_lock(int, int)
MAX_TF = 32767  # int16

# Per chunk of (ids, agents, users, lexes): each term's frequency and the chunk's length.
_PER_TERM = (
    "INSERT INTO memory_delta (agent_id, term, user_id, chunk_id, tf, len) "
    "SELECT r.agent, t.term, r.usr, r.id, count(*), max(r.dl) FROM ("
    "SELECT x.id, x.agent, x.usr, x.lex, "
    "cardinality(array_remove(string_to_array(coalesce(x.lex, ''), ' '), '')) "
    "AS dl FROM {rows}) AS r, unnest(string_to_array(coalesce(r.lex, ''), ' ')) AS t(term) "
    "WHERE t.term <> '' GROUP BY r.id, r.agent, r.usr, t.term"
)
_ROWS = "unnest(ids, agents, users, lexes) AS x(id, agent, usr, lex)"
POSTINGS_APPLY = f"""
CREATE OR REPLACE FUNCTION memory_postings_apply(
    ids bigint[], agents text[], users text[], lexes text[], sign integer)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF ids IS NULL OR cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock_shared({PACK_LOCK}, hashtext(a))
        FROM (SELECT DISTINCT unnest(agents) ORDER BY 1) AS g(a);
    IF sign > 0 THEN
        {_PER_TERM.format(rows=_ROWS)};
        RETURN;
    END IF;
    DELETE FROM memory_delta WHERE chunk_id = ANY(ids);
    WITH gone AS (
        DELETE FROM memory_ords o USING {_ROWS} WHERE o.chunk_id = x.id
        RETURNING o.agent_id, o.ord, x.usr, x.lex
    )
    INSERT INTO memory_tombs (agent_id, ord, user_id, lex) SELECT agent_id, ord, usr, lex FROM gone;
END $$;
"""

# Compaction, for one agent (``:a``) or, at install, for all: ordinals for the delta's chunks,
# then their postings appended to the packed rows.
_ASSIGN_ONE = (
    "WITH base AS (SELECT coalesce((SELECT next_ord FROM memory_packed_agents WHERE agent_id = :a), 0) "
    "AS n), "
    "new AS (INSERT INTO memory_ords (agent_id, ord, chunk_id) "
    "SELECT :a, base.n + row_number() OVER (ORDER BY d.chunk_id) - 1, d.chunk_id "
    "FROM (SELECT DISTINCT chunk_id FROM memory_delta WHERE agent_id = :a) AS d, base RETURNING ord) "
    "INSERT INTO memory_packed_agents (agent_id, next_ord, generation) SELECT :a, max(ord) + 1, "
    "txid_current() FROM new HAVING count(*) > 0 "
    "ON CONFLICT (agent_id) DO UPDATE SET next_ord = excluded.next_ord"
)
_ASSIGN_ALL = (
    "INSERT INTO memory_ords (agent_id, ord, chunk_id) SELECT agent_id, "
    "row_number() OVER (PARTITION BY agent_id ORDER BY chunk_id) - 1, chunk_id "
    "FROM (SELECT DISTINCT agent_id, chunk_id FROM memory_delta) AS d",
    "INSERT INTO memory_packed_agents (agent_id, next_ord, generation) SELECT agent_id, max(ord) + 1, "
    "txid_current() FROM memory_ords GROUP BY agent_id "
    "ON CONFLICT (agent_id) DO UPDATE SET next_ord = excluded.next_ord",
)
_APPEND = (
    "INSERT INTO memory_packed (agent_id, term, user_id, ords, tfs, lens) "
    "SELECT d.agent_id, d.term, d.user_id, string_agg(int4send(o.ord), ''::bytea ORDER BY o.ord), "
    f"string_agg(int2send(least(d.tf, {MAX_TF})::int2), ''::bytea ORDER BY o.ord), "
    "string_agg(int4send(d.len), ''::bytea ORDER BY o.ord) "
    "FROM memory_delta d JOIN memory_ords o ON o.chunk_id = d.chunk_id{where} "
    "GROUP BY d.agent_id, d.term, d.user_id ON CONFLICT (agent_id, term, user_id) DO UPDATE SET "
    "ords = memory_packed.ords || excluded.ords, tfs = memory_packed.tfs || excluded.tfs, "
    "lens = memory_packed.lens || excluded.lens"
)
APPEND_ONE = _APPEND.format(where=" WHERE d.agent_id = :a AND o.agent_id = :a")

_CHUNKS = "(SELECT id, agent_id AS agent, user_id AS usr, lex FROM memory_chunks) AS x"
# Every chunk, at install (the tables emptied first): through the delta, compacted at once.
POSTINGS_BACKFILL = (
    _PER_TERM.format(rows=_CHUNKS),
    *_ASSIGN_ALL,
    _APPEND.format(where=""),
    "TRUNCATE memory_delta",
)

# An agent whose unused ordinals (left by edits and deletions) pass both its packed chunks and
# RENUMBER_GAP is packed afresh from its chunks at its next compaction: the dense score array
# a search fills stays the size of the agent, however long it has been edited.
RENUMBER_GAP = 1000
_REPACK_ONE = (
    *(f"DELETE FROM {t} WHERE agent_id = :a" for t in POSTINGS_TABLE_NAMES),
    _PER_TERM.format(
        rows="(SELECT id, agent_id AS agent, user_id AS usr, lex FROM memory_chunks WHERE agent_id = :a) AS x"
    ),
)

# An agent's delta passing either size is compacted after a write (:func:`compact_if_due`).
COMPACT_ROWS = 25_000  # postings: ~300 chunks of average length
COMPACT_TOMBS = 300


def compact(conn: Any, agent_id: str, *, wait: bool = False) -> bool:
    """Fold the agent's delta and tombstones into its packed rows, in the caller's transaction
    (``conn``: a SQLAlchemy connection). False, doing nothing, while a writer of the agent is in
    flight (the next write's check tries again); with ``wait``, after the writers in flight
    commit (erasure: no term of the erased text may stay)."""
    from sqlalchemy import text

    lock = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
    got = conn.execute(text(f"SELECT {lock}(:k, hashtext(:a))::text"), {"k": PACK_LOCK, "a": agent_id})
    if got.scalar_one() == "false":
        return False
    used = conn.execute(
        text(
            "SELECT next_ord, (SELECT count(*) FROM memory_ords WHERE agent_id = :a), "
            "(SELECT count(DISTINCT chunk_id) FROM memory_delta WHERE agent_id = :a) "
            "FROM memory_packed_agents WHERE agent_id = :a"
        ),
        {"a": agent_id},
    ).first()
    # Unused ordinals against the chunks packed once this compaction is done.
    if used is not None and used[0] - used[1] > max(RENUMBER_GAP, used[1] + used[2]):
        for sql in _REPACK_ONE:  # no writer in flight: the chunks are the whole truth
            conn.execute(text(sql), {"a": agent_id})
    conn.execute(text(_ASSIGN_ONE), {"a": agent_id})
    conn.execute(text(APPEND_ONE), {"a": agent_id})
    conn.execute(text("DELETE FROM memory_delta WHERE agent_id = :a"), {"a": agent_id})
    tombs = conn.execute(
        text("DELETE FROM memory_tombs WHERE agent_id = :a RETURNING ord, user_id, lex"), {"a": agent_id}
    ).all()
    if tombs:
        _drop_ordinals(conn, agent_id, tombs)
    # A new generation: processes drop their cached lists of the agent. An agent left without
    # chunks keeps no row (its next ordinals start again from 0).
    conn.execute(
        text("UPDATE memory_packed_agents SET generation = txid_current() WHERE agent_id = :a"),
        {"a": agent_id},
    )
    conn.execute(
        text(
            "DELETE FROM memory_packed_agents WHERE agent_id = :a "
            "AND NOT EXISTS (SELECT 1 FROM memory_ords WHERE agent_id = :a)"
        ),
        {"a": agent_id},
    )
    return True


def _drop_ordinals(conn: Any, agent_id: str, tombs: Sequence[Any]) -> None:
    """Remove the tombstoned ordinals from the lists of their chunks' terms (a list left empty
    goes)."""
    from sqlalchemy import text

    dead = np.unique(np.array([int(t[0]) for t in tombs], dtype=np.int32))
    lists = {(t, user) for _ord, user, lex in tombs for t in (lex or "").split(" ") if t}
    rows = conn.execute(
        text(
            "SELECT term, user_id, ords, tfs, lens FROM memory_packed WHERE agent_id = :a "
            "AND term = ANY(:t) AND user_id = ANY(:u)"
        ),
        {"a": agent_id, "t": sorted({t for t, _u in lists}), "u": sorted({u for _t, u in lists})},
    ).all()
    updates, deletes = [], []
    for term, user, ords, tfs, lens in rows:
        if (term, user) not in lists:
            continue
        o = np.frombuffer(ords, ">i4")
        keep = ~np.isin(o, dead, assume_unique=True)
        if keep.all():
            continue
        key = {"a": agent_id, "t": term, "u": user}
        if not keep.any():
            deletes.append(key)
            continue
        updates.append(
            key
            | {
                "o": o[keep].tobytes(),
                "f": np.frombuffer(tfs, ">i2")[keep].tobytes(),
                "l": np.frombuffer(lens, ">i4")[keep].tobytes(),
            }
        )
    where = " WHERE agent_id = :a AND term = :t AND user_id = :u"
    if updates:
        conn.execute(text("UPDATE memory_packed SET ords = :o, tfs = :f, lens = :l" + where), updates)
    if deletes:
        conn.execute(text("DELETE FROM memory_packed" + where), deletes)


def compact_if_due(engine: Any, agent_id: str) -> bool:
    """Compact the agent (:func:`compact`) when its delta or tombstones passed
    :data:`COMPACT_ROWS` / :data:`COMPACT_TOMBS`; True when it did."""
    from sqlalchemy import text

    with engine.db.engine.begin() as c:
        due = c.execute(
            text(
                "SELECT (SELECT count(*) FROM (SELECT 1 FROM memory_delta WHERE agent_id = :a LIMIT :r) d) "
                ">= :r "
                "OR (SELECT count(*) FROM (SELECT 1 FROM memory_tombs WHERE agent_id = :a LIMIT :t) t) >= :t"
            ),
            {"a": agent_id, "r": COMPACT_ROWS, "t": COMPACT_TOMBS},
        ).scalar_one()
        return bool(due) and compact(c, agent_id)


# ---------------------------------------------------------------------------- search side

# One statement (one snapshot): the query terms' packed rows in the scope's users (but those the
# client holds of the agent's current generation), their delta (aggregated to the same arrays,
# chunk ids in place of ordinals), the agent's tombstones, its ordinal count and generation, its
# chunk count and total length, and the terms' document frequencies (sums of the statistics'
# delta rows, goclaw_memory.pg_stats), and, when asked for and the client lacks them at the
# current generation, the chunk id of every ordinal (:class:`OrdIds`): %s = agent, terms,
# users, the client's generation, the (term, user) pairs it holds (two arrays), then agent,
# terms, users, agent, agent, agent, agent, terms, then whether to send the chunk ids, agent,
# agent, the client's generation again, whether it lacks them at that generation.
FETCH = (
    "SELECT 0, p.term, p.user_id, p.ords, p.tfs, p.lens FROM memory_packed p WHERE p.agent_id = %s "
    "AND p.term = ANY(%s) AND p.user_id = ANY(%s) AND ((SELECT generation FROM memory_packed_agents g "
    "WHERE g.agent_id = p.agent_id) IS DISTINCT FROM %s OR (p.term, p.user_id) NOT IN "
    "(SELECT * FROM unnest(%s::text[], %s::text[]))) UNION ALL "
    "SELECT 1, term, NULL, string_agg(int8send(chunk_id), ''::bytea), "
    f"string_agg(int2send(least(tf, {MAX_TF})::int2), ''::bytea), string_agg(int4send(len), ''::bytea) "
    "FROM memory_delta WHERE agent_id = %s AND term = ANY(%s) AND user_id = ANY(%s) GROUP BY term UNION ALL "
    "SELECT 2, NULL, NULL, string_agg(int4send(ord), ''::bytea), NULL, NULL FROM memory_tombs "
    "WHERE agent_id = %s UNION ALL "
    "SELECT 3, NULL, NULL, int4send(next_ord), int8send(generation), NULL FROM memory_packed_agents "
    "WHERE agent_id = %s UNION ALL "
    "SELECT 4, NULL, NULL, int8send(coalesce(sum(chunks), 0)::int8), "
    "int8send(coalesce(sum(terms), 0)::int8), NULL FROM memory_agent_stats WHERE agent_id = %s UNION ALL "
    "SELECT 5, term, NULL, int8send(sum(df)::int8), NULL, NULL FROM memory_term_stats WHERE agent_id = %s "
    "AND term = ANY(%s) GROUP BY term UNION ALL "
    "SELECT 6, NULL, NULL, string_agg(int4send(ord), ''::bytea), string_agg(int8send(chunk_id), ''::bytea), "
    "NULL FROM memory_ords WHERE %s AND agent_id = %s AND ((SELECT generation FROM memory_packed_agents "
    "WHERE agent_id = %s) IS DISTINCT FROM %s OR %s)"
)


class Arrays:
    """A packed row, native: ordinals (int32), frequencies and chunk lengths (float32), and the
    BM25 frequency factor of each posting for the mean length it was last asked for (a read-
    mostly agent's mean length stays put: the factor is computed once, not per search)."""

    __slots__ = ("_avgdl", "_factor", "dl", "ords", "tf")

    def __init__(self, ords: np.ndarray, tf: np.ndarray, dl: np.ndarray) -> None:
        self.ords, self.tf, self.dl = ords, tf, dl
        self._avgdl = -1.0
        self._factor = tf

    @property
    def nbytes(self) -> int:
        return 200 + self.ords.nbytes + self.tf.nbytes * 4

    def factor(self, avgdl: float) -> np.ndarray:
        """``tf / (tf + k1 (1 - b + b dl / avgdl))`` of each posting."""
        if avgdl != self._avgdl:  # in float64, as the delta's (the two must agree to the last digit)
            tf = self.tf.astype(np.float64)
            norm = K1 * (1 - B + B * self.dl.astype(np.float64) / max(avgdl, 1e-9))
            self._factor, self._avgdl = tf / (tf + norm), avgdl
        return self._factor


def decode(ords: bytes, tfs: bytes, lens: bytes) -> Arrays:
    """A packed row's arrays, native."""
    return Arrays(
        np.frombuffer(ords, ">i4").astype(np.int32),
        np.frombuffer(tfs, ">i2").astype(np.float32),
        np.frombuffer(lens, ">i4").astype(np.float32),
    )


_EMPTY = Arrays(np.zeros(0, np.int32), np.zeros(0, np.float32), np.zeros(0, np.float32))


class OrdIds:
    """The chunk id of each of an agent's ordinals at one generation (-1: not known): all of
    them sent with the postings to the generation's first hybrid search (:data:`FETCH`), or
    those the rows a full-text search read. An ordinal names one chunk until a compaction
    renumbers the agent, and every compaction gives the agent a new generation, so a search
    reads its best by id and saves the lookup in ``memory_ords`` (an index descent per
    ordinal, most of the cost of reading the best chunks' cosines)."""

    __slots__ = ("generation", "ids")

    def __init__(self, generation: int, n_ords: int) -> None:
        self.generation = generation
        self.ids = np.full(max(n_ords, 0), -1, np.int64)

    @property
    def nbytes(self) -> int:
        return 100 + self.ids.nbytes

    def of(self, ords: np.ndarray) -> np.ndarray:
        """The known chunk id of each ordinal, -1 where none is."""
        out = np.full(len(ords), -1, np.int64)
        inside = (ords >= 0) & (ords < len(self.ids))
        out[inside] = self.ids[ords[inside]]
        return out

    def fill(self, packed: tuple[bytes, bytes]) -> None:
        """Note every ordinal's chunk id as :data:`FETCH` sends them (big-endian int4
        ordinals, int8 ids)."""
        self.learn(np.frombuffer(packed[0], ">i4"), np.frombuffer(packed[1], ">i8"))

    def learn(self, ords: Sequence[int], ids: Sequence[int]) -> None:
        """Note chunk ids read with their ordinals (ordinals past the generation's are not
        kept: the next generation starts afresh)."""
        o, i = np.asarray(ords, np.int64), np.asarray(ids, np.int64)
        inside = (o >= 0) & (o < len(self.ids))
        self.ids[o[inside]] = i[inside]


_IDS = "\x00ids"  # the user part of an agent's OrdIds key in the cache (no user id is this)


class ListCache:
    """Decoded packed lists a process searched recently, within a byte budget (least recently
    used out first): the postings of common terms, a search's largest read, come from memory
    while the agent's generation (bumped by every compaction) is the one they were read at.
    The agent's :class:`OrdIds` share the budget. Bounded, whatever the number of agents or
    chunks in the database."""

    def __init__(self, budget_mb: float) -> None:
        self.budget = int(budget_mb * 2**20)
        self._lock = threading.Lock()
        self._lists: OrderedDict[tuple[str, str, str], Arrays | OrdIds] = OrderedDict()
        self._generation: dict[str, int | None] = {}
        self._bytes = 0

    def held(
        self, agent_id: str, terms: Sequence[str], users: Sequence[str]
    ) -> tuple[int | None, dict[tuple[str, str], Arrays]]:
        """The agent's generation as cached (None: nothing) and the (term, user) lists held."""
        with self._lock:
            if agent_id not in self._generation:
                return None, {}
            out = {}
            for t in terms:
                for u in users:
                    got = self._lists.get((agent_id, t, u))
                    if isinstance(got, Arrays):
                        self._lists.move_to_end((agent_id, t, u))
                        out[t, u] = got
            return self._generation[agent_id], out

    def holds_ids(self, agent_id: str, generation: int | None) -> bool:
        """Whether the agent's :class:`OrdIds` at ``generation`` are held."""
        with self._lock:
            got = self._lists.get((agent_id, "", _IDS))
            return isinstance(got, OrdIds) and got.generation == generation

    def ord_ids(self, agent_id: str, generation: int | None, n_ords: int) -> OrdIds | None:
        """The agent's :class:`OrdIds` at ``generation`` (after :func:`fetched` stored it), made
        empty when none is held; None when the cache is off or holds another generation."""
        if self.budget <= 0 or generation is None:
            return None
        key = (agent_id, "", _IDS)
        with self._lock:
            if self._generation.get(agent_id) != generation:
                return None
            got = self._lists.get(key)
            if isinstance(got, OrdIds) and got.generation == generation:
                self._lists.move_to_end(key)
                return got
            made = OrdIds(generation, n_ords)
            self._put(key, made)
            return made

    def _put(self, key: tuple[str, str, str], arrays: Arrays | OrdIds) -> None:
        """Hold ``arrays`` under ``key`` (the lock held), the least recently used out while the
        budget is passed."""
        old = self._lists.pop(key, None)
        if old is not None:
            self._bytes -= _size(old)
        self._lists[key] = arrays
        self._bytes += _size(arrays)
        while self._bytes > self.budget and self._lists:
            gone, dropped = self._lists.popitem(last=False)
            self._bytes -= _size(dropped)
            if not any(k[0] == gone[0] for k in self._lists):
                self._generation.pop(gone[0], None)

    def store(
        self, agent_id: str, generation: int | None, lists: dict[tuple[str, str], Arrays], fresh: bool
    ) -> None:
        """Hold ``lists`` of the agent at ``generation``; ``fresh``: the generation changed,
        what was held of the agent goes first."""
        if self.budget <= 0:
            return
        with self._lock:
            if fresh or self._generation.get(agent_id, generation) != generation:
                for key in [k for k in self._lists if k[0] == agent_id]:
                    self._bytes -= _size(self._lists.pop(key))
            self._generation[agent_id] = generation
            for (t, u), arrays in lists.items():
                self._put((agent_id, t, u), arrays)


def _size(arrays: Arrays | OrdIds) -> int:
    return arrays.nbytes


@dataclass
class Lists:
    """A query's postings: per term, packed (by ordinal; a part per user) and delta (by chunk
    id, raw)."""

    packed: dict[str, list[Arrays]] = field(default_factory=dict)
    delta: dict[str, tuple[bytes, bytes, bytes]] = field(default_factory=dict)
    dead: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    n_ords: int = 0
    generation: int | None = None
    chunks: int = 0  # the agent's chunk count, total length and the terms' document frequencies
    total: int = 0
    df: dict[str, int] = field(default_factory=dict)
    ord_ids: tuple[bytes, bytes] | None = None  # every ordinal and its chunk id, when sent


def fetched(
    rows: Sequence[Any],
    cache: ListCache,
    agent_id: str,
    terms: Sequence[str],
    users: Sequence[str],
    held: tuple[int | None, dict[tuple[str, str], Arrays]],
) -> Lists:
    """The :data:`FETCH` rows with what ``cache`` held (``held``, as :meth:`ListCache.held`
    said before the fetch), the cache brought up to date."""
    lists = Lists()
    new: dict[tuple[str, str], Arrays] = {}
    for kind, term, user, a, b, c in rows:
        if kind == 0:
            new[term, user] = decode(a, b, c)
        elif kind == 1:
            lists.delta[term] = (a, b, c)
        elif kind == 2 and a is not None:
            lists.dead = np.frombuffer(a, ">i4").astype(np.int32)
        elif kind == 3:
            lists.n_ords = int(np.frombuffer(a, ">i4")[0])
            lists.generation = int(np.frombuffer(b, ">i8")[0])
        elif kind == 4:
            lists.chunks, lists.total = int(np.frombuffer(a, ">i8")[0]), int(np.frombuffer(b, ">i8")[0])
        elif kind == 5 and (df := int(np.frombuffer(a, ">i8")[0])) > 0:
            lists.df[term] = df
        elif kind == 6 and a is not None:
            lists.ord_ids = (a, b)
    generation, have = held
    fresh = generation != lists.generation
    if fresh:
        have = {}
    for t in terms:  # a list the agent lacks is held as empty, not asked for again
        for u in users:
            if (t, u) not in have and (t, u) not in new:
                new[t, u] = _EMPTY
    cache.store(agent_id, lists.generation, new, fresh)
    for (t, _u), arrays in (*have.items(), *new.items()):
        if len(arrays.ords):
            lists.packed.setdefault(t, []).append(arrays)
    return lists


def _contributions(
    parts: dict[str, tuple[bytes, bytes, bytes]], weights: dict[str, float], avgdl: float
) -> tuple[np.ndarray, np.ndarray]:
    """Chunk ids and BM25 term contributions of every delta posting of the weighted terms."""
    terms = [t for t in parts if t in weights]
    if not terms:
        return np.zeros(0, np.int64), np.zeros(0)
    keys = np.frombuffer(b"".join(parts[t][0] for t in terms), ">i8")
    tf = np.frombuffer(b"".join(parts[t][1] for t in terms), ">i2").astype(np.float64)
    dl = np.frombuffer(b"".join(parts[t][2] for t in terms), ">i4").astype(np.float64)
    counts = [len(parts[t][1]) // 2 for t in terms]
    w = np.repeat(np.array([weights[t] for t in terms]), counts)
    norm = K1 * (1 - B + B * dl / max(avgdl, 1e-9))
    return keys.astype(np.int64), w * (tf / (tf + norm))  # as Arrays.factor, to the last digit


@dataclass
class Scores:
    """Every matching chunk's exact BM25: packed chunks by ordinal (a dense array), delta
    chunks by id."""

    by_ord: np.ndarray  # float64, one per ordinal (0: no match, or deleted)
    delta_ids: np.ndarray  # int64, sorted
    delta_scores: np.ndarray

    def best(self, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ``m`` best matches: (ordinals, -1 for a delta chunk; chunk ids, -1 for a packed
        one; BM25), best first (ties by ordinal, then id)."""
        hit = top_positive(self.by_ord, m)
        ords = np.concatenate([hit, np.full(len(self.delta_ids), -1)])
        ids = np.concatenate([np.full(len(hit), -1), self.delta_ids])
        sc = np.concatenate([self.by_ord[hit], self.delta_scores])
        order = np.lexsort((ids, ords, -sc))[:m]
        return ords[order], ids[order], sc[order]

    def of(self, ords: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """The BM25 of chunks given by ordinal (-1: none) or else by id."""
        out = np.zeros(len(ords))
        packed = ords >= 0
        out[packed] = self.by_ord[ords[packed]]
        if len(self.delta_ids):
            pos = np.searchsorted(self.delta_ids, ids[~packed])
            pos = np.minimum(pos, len(self.delta_ids) - 1)
            found = self.delta_ids[pos] == ids[~packed]
            out[np.flatnonzero(~packed)[found]] = self.delta_scores[pos[found]]
        return out


def scores(lists: Lists, weights: dict[str, float], avgdl: float, allowed: Any = None) -> Scores:
    """Exact BM25 of every chunk holding a weighted term. ``weights``: per term, its count in
    the query × IDF × (k1 + 1). ``allowed`` (a filtered search): ``(ordinals, chunk ids)`` of the
    chunks let through, both sorted."""
    n = lists.n_ords
    by_ord = np.zeros(n, np.float64)
    for t, parts in lists.packed.items():
        w = weights.get(t)
        if w is None:
            continue
        for part in parts:  # a list holds an ordinal once: a plain scatter adds up
            scatter_add(by_ord, part.ords, part.factor(avgdl), w)
    if len(lists.dead):
        by_ord[lists.dead[lists.dead < len(by_ord)]] = 0.0
    dkeys, dcontrib = _contributions(lists.delta, weights, avgdl)
    ids, inverse = np.unique(dkeys, return_inverse=True)
    dscores = np.bincount(inverse, weights=dcontrib, minlength=len(ids)) if len(ids) else np.zeros(0)
    if allowed is not None:
        mask = np.zeros(len(by_ord), bool)
        mask[allowed[0][allowed[0] < len(by_ord)]] = True
        by_ord[~mask] = 0.0
        keep = np.isin(ids, allowed[1])
        ids, dscores = ids[keep], dscores[keep]
    return Scores(by_ord, ids, dscores)
