"""``backend = "inprocess"``: the kernel retrieval engine over any database (issue 11).

The SQLite backend's exact search (every chunk scored on both channels, the forward index for
the reranker) kept in step through the search contract's :class:`IndexSource` (version token,
fingerprints, records) instead of SQLite-specific SQL, so it runs on PostgreSQL too. There it
trades the database-side search (``backend = "postgresql"``: tsvector + HNSW candidate pools,
nothing held in memory, approximate at 100k chunks) for exactness and speed, at the cost of
memory per process (about 1.5 KB per chunk with the default 256-dimension embedder). The index
is saved in the workspace (``.goclaw/memory-index/<database>/``), so only the first process
ever rebuilds it from the table (100k chunks: ~12 s); later ones load it and catch up.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import bindparam, text

from goclaw.contracts.search import ChunkRow, IndexSource, Space
from goclaw.errors import StoreError
from goclaw.retrieval.index import Doc
from goclaw_memory.sqlite_backend import (
    SAVE_DELTA,
    SQLiteSearchBackend,
    _State,
    chunk_row,
    doc_of,
    fingerprint,
)

if TYPE_CHECKING:
    from goclaw.engine import Engine

_ROWS = text(
    "SELECT id, user_id, path, start_line, end_line, text, lex FROM memory_chunks "
    "WHERE id IN :ids AND (agent_id || '') = :a"
).bindparams(bindparam("ids", expanding=True))


class InProcessSearchBackend(SQLiteSearchBackend):
    """Exact in-process search, caught up through the :class:`IndexSource` contract."""

    name = "inprocess"

    def __init__(self, engine: Engine) -> None:
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

    def _src(self) -> IndexSource:
        if self._source is None:
            raise StoreError("the inprocess memory backend was used before the memory service opened it")
        return self._source

    def _token(self, agent_id: str) -> str:
        return self._src().version(agent_id)

    def _reconcile(self, agent_id: str, st: _State) -> None:
        """Catch up, and save a large catch-up (a first build) so the next process loads it."""
        super()._reconcile(agent_id, st)
        path = self._snapshot(agent_id)
        if path is not None and st.unsaved and (st.unsaved >= SAVE_DELTA or not path.exists()):
            self.save(agent_id)

    def _wanted(self, agent_id: str, space: Space | None) -> dict[int, int]:
        return {
            i: fingerprint(f.chunk_hash, f.user_id, f.has_vector)
            for i, f in self._src().fingerprints(agent_id, space).items()
        }

    def _docs(self, agent_id: str, missing: Sequence[int], space: Space | None) -> list[Doc]:
        return [doc_of(rec, space) for rec in self._src().records(agent_id, missing, space)]

    def _rows(
        self, agent_id: str, ids: Sequence[int], positions: Mapping[int, Mapping[str, Sequence[int]]] | None
    ) -> dict[int, ChunkRow]:
        if not ids:
            return {}
        with self.engine.db.engine.connect() as conn:
            result = conn.execute(_ROWS, {"ids": [int(i) for i in ids], "a": agent_id}).all()
        return {int(r[0]): chunk_row(r, positions) for r in result}
