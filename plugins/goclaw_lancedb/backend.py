"""The ``lancedb`` memory search backend: an index of its own, kept by the write contract.

Writes: :meth:`LanceDBSearchBackend.apply_changes` receives every indexing run's written
records and removed ids and patches the agent's LanceDB table (delete, add, then LanceDB's
``optimize`` brings the full-text and id indexes up to date). Reads: :meth:`search` runs
LanceDB's full-text search (BM25 over goclaw_search's terms) and its exact (flat) cosine vector
search, both filtered to the query's scope in LanceDB's ``where``; every candidate of either
channel is then scored on the other one too (:mod:`goclaw_lancedb.search`), and the channels
are fused by :func:`goclaw_search.fusion.fuse`. For the weighted fusion
the candidate lists grow until no chunk outside them can beat the last result (the threshold
rule), so the ranking is the formula applied to every chunk of the scope. :meth:`rows` is
served from the table too: the search path never reads the database's chunk table.

Consistency: a search reads the memory service's index version token
(:meth:`goclaw.contracts.search.IndexSource.version`, one primary-key read) and compares it with
the one the table's meta file records. When the table is behind (indexing ran while another
backend was selected, a crash between a database commit and ``apply_changes``) it resyncs
through the :class:`~goclaw.contracts.search.IndexSource` by fingerprint, or rebuilds, and says
so in the result's notes. Everything it knows of the memory service comes through the contract.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goclaw.contracts.search import (
    ChunkRow,
    IndexChanges,
    IndexSource,
    SearchBackend,
    SearchQuery,
    SearchResult,
    Space,
)
from goclaw_lancedb.search import search_table
from goclaw_lancedb.store import BATCH, AgentTable, file_lock, id_list, meta_file, table_name
from goclaw_search.tokenize import default_tokenizer

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

log = logging.getLogger(__name__)


@dataclass
class _State:
    table: Any
    token: str
    space: Space | None
    total: int = -1  # rows in the table (-1: not counted yet)


def lance_folder(engine: Host, configured: str) -> Path:
    """``[plugins.lancedb] path``, else ``<database>.lancedb`` next to a SQLite file, else
    ``<workspace>/.goclaw/lancedb``."""
    if configured:
        path = Path(configured).expanduser()
        return path if path.is_absolute() else engine.workspace / path
    db_path = engine.db.engine.url.database
    if (
        engine.db.backend == "sqlite"
        and db_path
        and db_path != ":memory:"
        and not db_path.startswith("file:")
    ):
        return Path(db_path + ".lancedb")
    return engine.workspace / ".goclaw" / "lancedb"


class LanceDBSearchBackend(SearchBackend):
    """LanceDB hybrid search (full text + vectors) over a table per agent."""

    name = "lancedb"
    filters = True  # query.filter narrows the scope's where clause (goclaw_lancedb.search)

    def __init__(self, engine: Host, folder: Path) -> None:
        # LanceDB's Rust log goes to stderr at WARN ("No existing dataset ... it will be
        # created"): keep the CLI's stderr for goclaw's own one-line notes.
        os.environ.setdefault("LANCE_LOG", "error")
        import lancedb

        self.engine = engine
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.db = lancedb.connect(str(folder))
        self.tokenizer = default_tokenizer()
        self._lock = threading.Lock()
        self._agent_locks: dict[str, threading.RLock] = {}
        self._states: dict[str, _State] = {}
        self._source: IndexSource | None = None
        self.resyncs = 0  # catch-ups that read the database (tests read it)
        self.patches = 0

    # ------------------------------------------------------------------ plumbing
    @property
    def source(self) -> IndexSource:
        if self._source is None:
            raise RuntimeError("the lancedb backend was used before open(source)")
        return self._source

    def open(self, source: IndexSource) -> None:
        self._source = source

    def close(self) -> None:
        with self._lock:
            self._states.clear()

    @contextmanager
    def _agent_lock(self, agent_id: str) -> Iterator[None]:
        """Serialise writes to the agent's table: between threads (a lock) and between
        processes (an exclusive ``flock`` on ``_goclaw/<table>.lock``), so a search that
        resyncs never interleaves with another process's ``apply_changes``."""
        with self._lock:
            lock = self._agent_locks.setdefault(agent_id, threading.RLock())
        with lock, file_lock(self.folder / "_goclaw" / f"{table_name(agent_id)}.lock"):
            yield

    def _table(self, agent_id: str) -> AgentTable:
        return AgentTable(self.db, self.folder, agent_id, self.tokenizer.version)

    def _ready(self, agent_id: str, space: Space | None) -> tuple[_State, list[str]]:
        """The agent's table, brought up to the database's state first when it is behind."""
        token = self.source.version(agent_id)
        st = self._states.get(agent_id)
        if st is not None and st.token == token and (space is None or st.space == space):
            return st, []
        with self._agent_lock(agent_id):
            at = self._table(agent_id)
            meta = at.meta()
            table = at.open() if meta else None
            have = at.space_of(meta)
            if table is not None and meta.get("token") == token and (space is None or have == space):
                st = _State(table, token, have)  # a fresh handle: the latest version
                notes: list[str] = []
            else:
                # In step with the database but in another embedding space: rebuilt for the
                # query's space without a note (the embedder changed; nothing was missed).
                behind = table is None or meta.get("token") != token
                st, notes = self._resync(at, table, space if space is not None else have, token, behind)
            self._states[agent_id] = st
            return st, notes

    def _resync(
        self, at: AgentTable, table: Any, space: Space | None, token: str, behind: bool = True
    ) -> tuple[_State, list[str]]:
        """Make the table hold exactly the database's chunks of the agent (by fingerprint when
        the table is in the right space, else rebuilt), then record ``token``."""
        want = self.source.fingerprints(at.agent_id, space)
        meta = at.meta()
        if table is not None and meta and at.space_of(meta) == space:
            have = at.fingerprints(table)
            stale = {i for i, f in have.items() if want.get(i) != f}
            missing = [i for i, f in want.items() if have.get(i) != f]
            if stale or missing:
                recs = list(self.source.records(at.agent_id, missing, space))
                at.patch(table, stale, recs, space)
            changed, what = len(stale | set(missing)), "resynced"
        else:
            recs = list(self.source.records(at.agent_id, sorted(want), space))
            table = at.create(recs, space)
            changed, what = len(recs), "rebuilt"
        at.write_meta(token, space)
        self.resyncs += 1
        notes = []
        if changed and behind:
            note = (
                f"the LanceDB index was behind the database ({changed} chunk(s) differed, e.g. "
                f"indexing ran while another backend was selected); {what} it from the database"
            )
            log.warning("agent %s: %s", at.agent_id, note)
            notes.append(note)
        return _State(table, token, space), notes

    # ------------------------------------------------------------------ contract: reads
    def search(self, query: SearchQuery) -> SearchResult:
        st, notes = self._ready(query.agent_id, query.space)
        seen: dict[int, ChunkRow] = {}
        try:
            chunks, more = self._search(st, query, seen)
        except (OSError, RuntimeError, ValueError):
            # Another process compacted away the version this handle read: reopen once.
            log.debug("LanceDB search failed; reopening the table", exc_info=True)
            self._states.pop(query.agent_id, None)
            st, again = self._ready(query.agent_id, query.space)
            notes += again
            chunks, more = self._search(st, query, seen)
        rows = {c.id: seen[c.id] for c in chunks if c.id in seen}
        return SearchResult(chunks, notes + more, rows if len(rows) == len(chunks) else None)

    @staticmethod
    def _search(st: _State, query: SearchQuery, seen: dict[int, ChunkRow]) -> tuple[list[Any], list[str]]:
        if st.total < 0:
            st.total = st.table.count_rows()
        return search_table(st.table, st.space, query, st.total, seen)

    def rows(self, agent_id: str, ids: Sequence[int]) -> dict[int, ChunkRow]:
        """The agent's chunks with these ids, from its LanceDB table."""
        st = self._states.get(agent_id)
        table = st.table if st is not None else self._table(agent_id).open()
        return _rows(table, [int(i) for i in ids]) if table is not None else {}

    # ------------------------------------------------------------------ contract: writes
    def prepare_vectors(self, dim: int) -> None:
        return None  # a table takes its vector width from the space of the records it holds

    def apply_changes(self, changes: IndexChanges) -> None:
        """Patch the agent's table with an indexing run's writes when the table holds the
        version the run started from (``changes.version_before``) and the run is complete;
        otherwise resync through the source."""
        if not changes.removed and not changes.records:
            return
        agent_id = changes.agent_id
        space = changes.space
        first, last = changes.version_before, changes.version_after
        chained = changes.complete and bool(last)
        recs = list(changes.records.values())
        with self._agent_lock(agent_id):
            self._states.pop(agent_id, None)
            at = self._table(agent_id)
            meta = at.meta()
            table = at.open() if meta else None
            have = at.space_of(meta)
            spaces = {r.space for r in recs if r.vector is not None}
            if table is None and chained and not first and at.open() is None:
                # The agent's first indexing run: its records are the whole content.
                table = at.create(recs, space)
                at.write_meta(last, space)
            elif table is not None and chained and meta.get("token") == first and spaces <= {have}:
                at.patch(table, changes.removed, recs, have)
                at.write_meta(last, have)
                self.patches += 1
            else:
                token = self.source.version(agent_id)
                self._resync(at, table, space if space is not None else have, token)

    def invalidate(self, agent_id: str | None = None) -> None:
        """The agent's rows changed outside an indexing run (``forget``, ``repair``): rebuild
        its table from the database now (every agent's when None), dropping the old files, so
        erased text leaves the LanceDB folder too."""
        with self._lock:
            if agent_id is None:
                self._states.clear()
            else:
                self._states.pop(agent_id, None)
        agents = [agent_id] if agent_id is not None else [self._agent_of(n) for n in _table_names(self.db)]
        for a in agents:
            if a is None:
                continue
            with self._agent_lock(a):
                at = self._table(a)
                meta = at.meta()
                at.forget_meta()
                if at.open() is None:
                    continue
                token = self.source.version(a)
                if self.source.fingerprints(a, None):
                    self._resync(at, None, at.space_of(meta), token)
                else:  # every chunk of the agent is gone (forget --agent): so is its table
                    self.db.drop_table(at.name)

    def _agent_of(self, name: str) -> str | None:
        """The agent whose table this is (from its meta file), or None."""
        try:
            import json

            data = json.loads(meta_file(self.folder, name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        agent = data.get("agent_id") if isinstance(data, dict) else None
        return agent if isinstance(agent, str) else None


def _table_names(db: Any) -> list[str]:
    listed = db.list_tables()
    names = getattr(listed, "tables", listed)
    return sorted(str(n) for n in names if str(n).startswith("chunks_"))


def _rows(table: Any, ids: Sequence[int]) -> dict[int, ChunkRow]:
    out: dict[int, ChunkRow] = {}
    cols = ["id", "user_id", "path", "start_line", "end_line", "text"]
    for start in range(0, len(ids), BATCH):
        part = ids[start : start + BATCH]
        data = table.search().where(f"id IN ({id_list(part)})").select(cols).limit(len(part)).to_arrow()
        for r in data.to_pylist():
            out[int(r["id"])] = ChunkRow(
                int(r["id"]), r["user_id"], r["path"], int(r["start_line"]), int(r["end_line"]), r["text"]
            )
    return out
