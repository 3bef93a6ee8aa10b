"""One agent's LanceDB table and the small meta file that says which database state it holds.

Table ``chunks_<agent>`` (one per agent, so BM25's statistics are the agent's own, as on the
built-in backends): ``id, agent_id, user_id, path, start_line, end_line, text, terms,
chunk_hash, has_vector, vector``. ``terms`` is goclaw_search's tokenizer's terms joined by spaces,
indexed by LanceDB's full-text index with a whitespace tokenizer and no stemming, stopwords or
lower-casing of its own, so tokenisation (and BM25: k1 1.2, b 0.75) matches the built-in backends'.
``vector`` is a fixed-size float32 list of the table's embedding space (a 1-d placeholder
when the table has none); rows without a vector of that space have ``has_vector = false``.

The meta file ``_goclaw/<table>.json`` holds the database's index version token the table
matches, the table's embedding space, the schema and the tokenizer version. It is replaced
atomically after the table's own commit, so a crash in between only makes the next reader
resync (the table's writes are idempotent).
"""

from __future__ import annotations

import json
import re
import warnings
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from goclaw.contracts.fsutil import atomic_write_text
from goclaw.contracts.search import ChunkRecord, Space

SCHEMA_VERSION = 1
BATCH = 1000  # ids per delete / lookup expression

Fingerprint = tuple[str, str, str, int, bool]


def lit(value: str) -> str:
    """A string literal for a LanceDB filter expression."""
    return "'" + value.replace("'", "''") + "'"


def id_list(ids: Iterable[int]) -> str:
    return ", ".join(str(int(i)) for i in ids)


def table_name(agent_id: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", agent_id)
    if safe != agent_id:
        safe = f"{safe[:80]}_{zlib.crc32(agent_id.encode('utf-8')):08x}"
    return f"chunks_{safe}"


def meta_file(folder: Path, name: str) -> Path:
    """Where the meta file of table ``name`` lives in the LanceDB ``folder``."""
    return folder / "_goclaw" / f"{name}.json"


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive inter-process lock (``flock``; a no-op where it does not exist)."""
    try:
        import fcntl
    except ImportError:  # Windows: threads are still serialised by the caller's lock
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def fts_config() -> Any:
    from lancedb.index import FTS

    return FTS(
        base_tokenizer="whitespace",
        lower_case=False,
        stem=False,
        remove_stop_words=False,
        ascii_folding=False,
        max_token_length=None,
    )


def schema(dim: int) -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("id", pa.int64()),
            ("agent_id", pa.string()),
            ("user_id", pa.string()),
            ("path", pa.string()),
            ("start_line", pa.int32()),
            ("end_line", pa.int32()),
            ("text", pa.string()),
            ("terms", pa.string()),
            ("chunk_hash", pa.string()),
            ("has_vector", pa.bool_()),
            ("vector", pa.list_(pa.float32(), max(1, dim))),
        ]
    )


def to_arrow(agent_id: str, recs: Sequence[ChunkRecord], space: Space | None) -> Any:
    """Records as an Arrow table of the schema of ``space`` (vectors of other spaces dropped)."""
    import pyarrow as pa

    dim = max(1, space[2] if space else 1)
    mat = np.zeros((len(recs), dim), dtype=np.float32)
    has = np.zeros(len(recs), dtype=bool)
    for i, rec in enumerate(recs):
        if space is not None and rec.vector is not None and rec.space == space:
            vec = np.asarray(rec.vector, dtype=np.float32).reshape(-1)
            if vec.shape[0] == dim:
                mat[i] = vec
                has[i] = True
    cols = {
        "id": pa.array([r.id for r in recs], pa.int64()),
        "agent_id": pa.array([agent_id] * len(recs), pa.string()),
        "user_id": pa.array([r.user_id for r in recs], pa.string()),
        "path": pa.array([r.path for r in recs], pa.string()),
        "start_line": pa.array([r.start_line for r in recs], pa.int32()),
        "end_line": pa.array([r.end_line for r in recs], pa.int32()),
        "text": pa.array([r.text for r in recs], pa.string()),
        "terms": pa.array([" ".join(r.terms) for r in recs], pa.string()),
        "chunk_hash": pa.array([r.chunk_hash for r in recs], pa.string()),
        "has_vector": pa.array(has, pa.bool_()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(mat.reshape(-1), pa.float32()), dim),
    }
    return pa.table(cols, schema=schema(dim))


class AgentTable:
    """One agent's table in the LanceDB folder, and its meta file."""

    def __init__(self, db: Any, folder: Path, agent_id: str, tokenizer_version: str) -> None:
        self.db = db
        self.agent_id = agent_id
        self.name = table_name(agent_id)
        self.meta_path = meta_file(folder, self.name)
        self.tokenizer_version = tokenizer_version

    # ------------------------------------------------------------------ meta
    def meta(self) -> dict[str, Any]:
        """The meta file, or {} when it is missing, damaged or from another schema/tokenizer."""
        try:
            data = json.loads(self.meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if (
            not isinstance(data, dict)
            or data.get("schema") != SCHEMA_VERSION
            or data.get("tokenizer") != self.tokenizer_version
            or data.get("agent_id") != self.agent_id
        ):
            return {}
        return data

    @staticmethod
    def space_of(meta: dict[str, Any]) -> Space | None:
        s = meta.get("space")
        return (str(s[0]), str(s[1]), int(s[2])) if isinstance(s, list) and len(s) == 3 else None

    def write_meta(self, token: str, space: Space | None) -> None:
        data = {
            "schema": SCHEMA_VERSION,
            "tokenizer": self.tokenizer_version,
            "agent_id": self.agent_id,
            "token": token,
            "space": list(space) if space else None,
        }
        atomic_write_text(self.meta_path, json.dumps(data))

    def forget_meta(self) -> None:
        self.meta_path.unlink(missing_ok=True)

    # ------------------------------------------------------------------ table
    def open(self) -> Any:
        """The table, or None when it does not exist."""
        try:
            return self.db.open_table(self.name)
        except (FileNotFoundError, ValueError):
            return None

    def create(self, recs: Sequence[ChunkRecord], space: Space | None) -> Any:
        """Replace the table with exactly ``recs`` (one atomic LanceDB commit)."""
        existed = self.open() is not None
        data = to_arrow(self.agent_id, recs, space)
        table = self.db.create_table(self.name, data, mode="overwrite" if existed else "create")
        table.create_index("terms", config=fts_config(), replace=True)
        self._id_index(table)
        if existed:
            purge(table)
        return table

    @staticmethod
    def _id_index(table: Any) -> None:
        from lancedb.index import BTree

        table.create_index("id", config=BTree(), replace=True)

    def patch(
        self, table: Any, removed: Iterable[int], recs: Sequence[ChunkRecord], space: Space | None
    ) -> None:
        """Delete ``removed`` and the records' ids, add the records, bring the indexes up to date."""
        gone = sorted({*removed, *(r.id for r in recs)})
        for start in range(0, len(gone), BATCH):
            table.delete(f"id IN ({id_list(gone[start : start + BATCH])})")
        for start in range(0, len(recs), 5 * BATCH):
            table.add(to_arrow(self.agent_id, recs[start : start + 5 * BATCH], space))
        table.optimize()  # older versions go after LanceDB's default 7 days (readers elsewhere)

    def fingerprints(self, table: Any) -> dict[int, Fingerprint]:
        n = table.count_rows()
        if not n:
            return {}
        cols = ["id", "chunk_hash", "user_id", "path", "start_line", "has_vector"]
        data = table.search().select(cols).limit(n).to_arrow().to_pydict()
        out: dict[int, Fingerprint] = {}
        for i, h, u, p, s, v in zip(*(data[c] for c in cols), strict=True):
            # An id held twice (two writers that were not serialised) matches nothing: the
            # resync deletes every copy and adds the row once.
            out[int(i)] = ("", "", "", -1, False) if int(i) in out else (h, u, p, int(s), bool(v))
        return out


def purge(table: Any) -> None:
    """Compact, update the indexes and drop older versions' files: text replaced by a
    rebuild (``forget`` ends with one) leaves the folder, not only the current version. A
    reader in another process still on an older version fails once and reopens the table."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "removes every version except the latest"
        table.optimize(cleanup_older_than=timedelta(0))
