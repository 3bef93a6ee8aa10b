"""``backend = "inprocess"``: the :mod:`goclaw_search` retrieval engine over any database; what
``auto`` selects on PostgreSQL.

The SQLite backend's exact search (every chunk scored on both channels, the forward index for
the reranker) kept in step through the search contract's :class:`IndexSource` (version token,
fingerprints, records) instead of SQLite-specific SQL, so it runs on PostgreSQL too. There it
trades the database-side search (``backend = "postgresql"``: tsvector + HNSW candidate pools,
nothing held in memory, approximate at 100k chunks) for exactness and speed, at the cost of
memory per process (docs/decisions.md has the figures). The index is saved in the workspace
(``.goclaw/memory-index/<database>/``), so only the first process ever rebuilds it from the
table; later ones load it (memory-mapped) and catch up by fingerprints. ``goclaw memory
index`` leaves a saved index behind even when nothing changed. A workspace where it cannot be
saved (read-only) costs one warning, then every process keeps its index in memory only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import bindparam, text

from goclaw.contracts.search import ChunkRow, IndexChanges, IndexSource, Space
from goclaw.errors import StoreError
from goclaw_memory.indexer import paused_gc
from goclaw_memory.search_rows import chunk_row
from goclaw_memory.sqlite_backend import (
    SAVE_DELTA,
    SQLiteSearchBackend,
    _State,
    doc_of,
    fingerprint,
)
from goclaw_memory.version_token import VERSION_WORKER, parse_token
from goclaw_search.index import Doc, SearchIndex
from goclaw_search.pg_reads import int_array

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

NO_TOKEN = "(none)"  # the version token of an agent whose rows carry none
_PG_ROWS = (
    "SELECT id, user_id, path, start_line, end_line, text, {lex} FROM memory_chunks "
    "WHERE id = ANY(%s::text::int8[]) AND agent_id = %s"
)
_PG_TEXTS = (
    "SELECT id, text, chunk_hash, user_id FROM memory_chunks "
    "WHERE id = ANY(%s::text::int8[]) AND agent_id = %s"
)
_TEXTS = text(
    "SELECT id, text, chunk_hash, user_id FROM memory_chunks WHERE id IN :ids AND (agent_id || '') = :a"
).bindparams(bindparam("ids", expanding=True))
_LOCATIONS = text("SELECT id, path, start_line, end_line FROM memory_chunks WHERE agent_id = :a")
_PG_TOKEN = "SELECT value FROM worker_state WHERE worker = %s AND scope = %s"  # as ChunkTableSource
_ROWS = text(
    "SELECT id, user_id, path, start_line, end_line, text, lex FROM memory_chunks "
    "WHERE id IN :ids AND (agent_id || '') = :a"
).bindparams(bindparam("ids", expanding=True))


class InProcessSearchBackend(SQLiteSearchBackend):
    """Exact in-process search, caught up through the :class:`IndexSource` contract."""

    name = "inprocess"

    def __init__(self, engine: Host) -> None:
        super().__init__(engine)
        self._source: IndexSource | None = None
        if self.snapshot_dir is None:
            # Not SQLite: save the index in the workspace, one folder per database (the URL
            # without its password, hashed). A saved index is only a head start: each search
            # checks the database's version token and catches up by fingerprints.
            url = engine.db.engine.url.render_as_string(hide_password=True)
            key = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
            self.snapshot_dir = Path(engine.workspace) / ".goclaw" / "memory-index" / key

    def open(self, source: IndexSource) -> None:
        self._source = source
        from goclaw_memory.source import ChunkTableSource

        # On PostgreSQL a search's reads are round trips: the version token travels with the
        # rows (one trip, not two) when the token is this plugin's own table's.
        self._token_with_rows = self.engine.db.backend == "postgresql" and type(source) is ChunkTableSource

    def _src(self) -> IndexSource:
        if self._source is None:
            raise StoreError("the inprocess memory backend was used before the memory service opened it")
        return self._source

    def _token(self, agent_id: str) -> str:
        # Chunks without a version token (rows written before tokens existed, e.g. a database
        # upgraded from an old schema) must still be read once: "" would equal the empty
        # index's own token and the search would find nothing until the next index run.
        return self._src().version(agent_id) or NO_TOKEN

    def _reconcile(self, agent_id: str, st: _State) -> None:
        """Catch up, and save a large catch-up (a first build) so the next process loads it."""
        # The token read before the catch-up is one the caught-up index holds at least: it is
        # saved with it. (The caller sets ``st.token`` only after this returns; saving the
        # stale one would make every later process re-read all fingerprints: 0.7 s at 100k chunks.)
        token = self._token(agent_id)
        with paused_gc():  # as an index run: a build makes ~100 long-lived objects per chunk
            super()._reconcile(agent_id, st)
        path = self._snapshot(agent_id)
        if path is not None and st.unsaved and (st.unsaved >= SAVE_DELTA or not path.exists()):
            large = st.unsaved >= SAVE_DELTA
            st.token = token
            if self.save(agent_id) is not None and large:
                _swap_for_saved(st, path)

    def apply_changes(self, changes: IndexChanges) -> None:
        """Patch and save as the SQLite backend does; also when the run changed nothing but no
        saved index exists yet (an agent indexed by another backend or workspace), so that the
        next process's first search loads the index instead of building it from the table."""
        super().apply_changes(changes)
        path = self._snapshot(changes.agent_id)
        if path is not None and not self._unsaveable and not path.exists():
            self._state(changes.agent_id, changes.space)
            self.save(changes.agent_id)

    def _wanted(self, agent_id: str, space: Space | None) -> dict[int, int]:
        return {
            i: fingerprint(f.chunk_hash, f.user_id, f.has_vector)
            for i, f in self._src().fingerprints(agent_id, space).items()
        }

    def _docs(self, agent_id: str, missing: Sequence[int], space: Space | None) -> list[Doc]:
        records = list(self._src().records(agent_id, missing, space))
        return self._sketched([doc_of(rec, space) for rec in records], [rec.text for rec in records], space)

    def _rows_and_token(
        self, agent_id: str, ids: Sequence[int], positions: Mapping[int, Mapping[str, Sequence[int]]] | None
    ) -> tuple[dict[int, ChunkRow], str]:
        if not self._token_with_rows:
            return super()._rows_and_token(agent_id, ids, positions)
        from goclaw_memory.pg_direct import direct

        statements: list[tuple[str, Sequence[object]]] = [(_PG_TOKEN, (VERSION_WORKER, agent_id))]
        if ids:
            sql = _PG_ROWS.format(lex="lex" if positions is None else "NULL")
            statements.append((sql, (int_array(ids), agent_id)))
        found = direct(self.engine).queries(statements)
        token = (parse_token(found[0][0][0]) if found[0] else "") or NO_TOKEN
        rows = {int(r[0]): chunk_row(r, positions) for r in found[1]} if ids else {}
        return rows, token

    def _rows(
        self, agent_id: str, ids: Sequence[int], positions: Mapping[int, Mapping[str, Sequence[int]]] | None
    ) -> dict[int, ChunkRow]:
        if not ids:
            return {}
        if self.engine.db.backend == "postgresql":
            from goclaw_memory.pg_direct import direct

            sql = _PG_ROWS.format(lex="lex" if positions is None else "NULL")
            found = direct(self.engine).query(sql, (int_array(ids), agent_id))
            return {int(r[0]): chunk_row(r, positions) for r in found}
        with self.engine.db.engine.connect() as conn:
            result = conn.execute(_ROWS, {"ids": [int(i) for i in ids], "a": agent_id}).all()
        return {int(r[0]): chunk_row(r, positions) for r in result}

    def _texts(self, agent_id: str, ids: Sequence[int]) -> dict[int, tuple[str, str, str]]:
        if not ids:
            return {}
        if self.engine.db.backend == "postgresql":
            from goclaw_memory.pg_direct import direct

            found = direct(self.engine).query(_PG_TEXTS, (int_array(ids), agent_id))
            return {int(r[0]): (r[1], r[2], r[3]) for r in found}
        with self.engine.db.engine.connect() as conn:
            result = conn.execute(_TEXTS, {"ids": [int(i) for i in ids], "a": agent_id}).all()
        return {int(r[0]): (r[1], r[2], r[3]) for r in result}

    def _locations(self, agent_id: str) -> list[tuple[int, str, int, int]]:
        with self.engine.db.engine.connect() as conn:
            result = conn.execute(_LOCATIONS, {"a": agent_id}).all()
        return [(int(i), str(p), int(a), int(b)) for i, p, a, b in result]


def _swap_for_saved(st: _State, path: Path) -> None:
    """After a large build, search the saved copy (memory-mapped, pages shared with every
    process of the workspace and reclaimable) instead of the one built on the heap, and hand
    the freed heap back to the system: at 100k chunks the building process then holds ~400 MB
    instead of ~800 MB (the build's peak is unchanged)."""
    try:
        saved = SearchIndex.load(path)
    except Exception:  # pragma: no cover - just written; keep the built copy
        return
    if str(saved.meta.get("token", "")) != st.token:
        return  # another process replaced it since: its content is not what st.token says
    st.index = saved
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)  # glibc keeps freed arenas otherwise
    except (OSError, AttributeError):  # not glibc: the memory is reused, not returned
        pass
