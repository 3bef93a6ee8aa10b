"""The ``lancedb`` memory search backend: an index of its own, kept by the write contract.

Writes: :meth:`LanceDBSearchBackend.apply_changes` receives every indexing run's written
records and removed ids and patches the agent's LanceDB table (delete, add, then LanceDB's
``optimize`` brings the full-text and id indexes up to date). Reads: :meth:`search` runs
LanceDB's full-text search (BM25 over the kernel's terms) and its exact (flat) cosine vector
search, both filtered to the query's scope in LanceDB's ``where``; every candidate of either
channel is then scored on the other one too (:mod:`goclaw_lancedb.search`), and the channels
are fused by :func:`goclaw.retrieval.fusion.fuse`. For the weighted fusion
the candidate lists grow until no chunk outside them can beat the last result (the threshold
rule), so the ranking is the formula applied to every chunk of the scope. :meth:`rows` is
served from the table too: the search path never reads the database's chunk table.

Consistency: a search reads the database's index version token (one primary-key read of
``worker_state``) and compares it with the one the table's meta file records. When the table
is behind (indexing ran while another backend was selected, a crash between a database commit
and ``apply_changes``, ``forget`` / ``repair`` changed rows directly) it resyncs from the
database by fingerprint, or rebuilds, and says so in the result's notes.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goclaw.contracts.search import ChunkRow, IndexChanges, SearchQuery, SearchResult, Space
from goclaw.retrieval.tokenize import default_tokenizer
from goclaw_lancedb import source
from goclaw_lancedb.search import search_table
from goclaw_lancedb.store import BATCH, AgentTable, file_lock, id_list, table_name

if TYPE_CHECKING:
    from goclaw.engine import Engine

log = logging.getLogger(__name__)

OWNERS = 200_000  # chunk id -> agent, remembered from searches so rows() knows the table


@dataclass
class _State:
    table: Any
    token: str
    space: Space | None
    total: int = -1  # rows in the table (-1: not counted yet)


def lance_folder(engine: Engine, configured: str) -> Path:
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


class LanceDBSearchBackend:
    """LanceDB hybrid search (full text + vectors) over a table per agent."""

    name = "lancedb"

    def __init__(self, engine: Engine, folder: Path) -> None:
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
        self._owners: OrderedDict[int, str] = OrderedDict()
        self._recent: dict[int, ChunkRow] = {}  # the last search's rows
        self.resyncs = 0  # catch-ups that read the database (tests read it)
        self.patches = 0

    # ------------------------------------------------------------------ plumbing
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

    def _remember(self, agent_id: str, ids: Sequence[int], seen: dict[int, ChunkRow]) -> None:
        """Which agent each returned id belongs to, and the rows the search already read (the
        service asks for exactly these next)."""
        with self._lock:
            for i in ids:
                self._owners[int(i)] = agent_id
                self._owners.move_to_end(int(i))
            while len(self._owners) > OWNERS:
                self._owners.popitem(last=False)
            self._recent = {i: seen[i] for i in ids if i in seen}

    def _ready(self, agent_id: str, space: Space | None) -> tuple[_State, list[str]]:
        """The agent's table, brought up to the database's state first when it is behind."""
        token = source.db_token(self.engine, agent_id)
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
        self._recent = {}
        want = source.fingerprints(self.engine, at.agent_id, space)
        meta = at.meta()
        tokenize = self.tokenizer.terms
        if table is not None and meta and at.space_of(meta) == space:
            have = at.fingerprints(table)
            stale = {i for i, f in have.items() if want.get(i) != f}
            missing = [i for i, f in want.items() if have.get(i) != f]
            if stale or missing:
                recs = list(source.records(self.engine, missing, space, tokenize))
                at.patch(table, stale, recs, space)
            changed, what = len(stale | set(missing)), "resynced"
        else:
            recs = list(source.records(self.engine, sorted(want), space, tokenize))
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
        self._remember(query.agent_id, [c.id for c in chunks], seen)
        return SearchResult(chunks, notes + more)

    @staticmethod
    def _search(st: _State, query: SearchQuery, seen: dict[int, ChunkRow]) -> tuple[list[Any], list[str]]:
        if st.total < 0:
            st.total = st.table.count_rows()
        return search_table(st.table, st.space, query, st.total, seen)

    def rows(self, ids: Sequence[int]) -> dict[int, ChunkRow]:
        """The chunks with these ids, from the LanceDB tables (the contract gives no agent:
        ids a search returned are looked up in their agent's table, others in every table)."""
        by_agent: dict[str | None, list[int]] = {}
        out: dict[int, ChunkRow] = {}
        with self._lock:
            recent = self._recent
            for i in ids:
                if int(i) in recent:
                    out[int(i)] = recent[int(i)]
                else:
                    by_agent.setdefault(self._owners.get(int(i)), []).append(int(i))
        unknown = by_agent.pop(None, [])
        for agent_id, part in by_agent.items():
            st = self._states.get(agent_id) if agent_id else None
            table = st.table if st is not None else self._table(agent_id or "").open()
            if table is not None:
                out.update(_rows(table, part))
        if unknown:
            for name in _table_names(self.db):
                left = [i for i in unknown if i not in out]
                if not left:
                    break
                out.update(_rows(self.db.open_table(name), left))
        return out

    # ------------------------------------------------------------------ contract: writes
    def prepare_vectors(self, dim: int) -> None:
        return None  # a table takes its vector width from the space of the records it holds

    def apply_changes(self, changes: IndexChanges) -> None:
        """Patch the agent's table with an indexing run's writes. The version tokens the
        memory service's change set carries (not part of the contract: ``first``, ``last``,
        ``chained``, ``space``) say whether the table saw every earlier write; when it did
        not, it resyncs from the database instead."""
        if not changes.removed and not changes.records:
            return
        agent_id = changes.agent_id
        space: Space | None = getattr(changes, "space", None)
        first, last = getattr(changes, "first", None), getattr(changes, "last", None)
        chained = bool(getattr(changes, "chained", False)) and bool(last)
        recs = list(changes.records.values())
        with self._agent_lock(agent_id):
            self._states.pop(agent_id, None)
            self._recent = {}
            at = self._table(agent_id)
            meta = at.meta()
            table = at.open() if meta else None
            have = at.space_of(meta)
            spaces = {r.space for r in recs if r.vector is not None}
            if table is None and chained and not first and at.open() is None:
                # The agent's first indexing run: its records are the whole content.
                table = at.create(recs, space)
                at.write_meta(str(last), space)
            elif table is not None and chained and meta.get("token") == first and spaces <= {have}:
                at.patch(table, changes.removed, recs, have)
                at.write_meta(str(last), have)
                self.patches += 1
            else:
                token = source.db_token(self.engine, agent_id)
                self._resync(at, table, space if space is not None else have, token)

    def invalidate(self, agent_id: str | None = None) -> None:
        """The agent's rows changed outside an indexing run (``forget``, ``repair``): rebuild
        its table from the database now (every agent's when None), dropping the old files, so
        erased text leaves the LanceDB folder too."""
        with self._lock:
            self._recent = {}
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
                token = source.db_token(self.engine, a)
                if source.fingerprints(self.engine, a, None):
                    self._resync(at, None, at.space_of(meta), token)
                else:  # every chunk of the agent is gone (forget --agent): so is its table
                    self.db.drop_table(at.name)

    def _agent_of(self, name: str) -> str | None:
        """The agent whose table this is (from its meta file), or None."""
        try:
            import json

            data = json.loads((self.folder / "_goclaw" / f"{name}.json").read_text(encoding="utf-8"))
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
