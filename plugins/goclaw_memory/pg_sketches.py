"""The ``postgresql`` backend's passage sketches: kept in ``memory_sketches``, read with the rows a
search reads anyway.

The overlap reranker's passage step (docs/memory.md, "Passages") scores its best hits from
their *passage sketches* (:mod:`goclaw_search.passage_sketches`) when the backend has them,
else it embeds their passages from the text. The in-process backends keep a sketch per chunk in
their index; this backend keeps none in memory between searches, so it stores them:

* **Written** by :meth:`PostgresSearchBackend.apply_changes` for the chunks an index run wrote
  with a vector, when the passage step is on and the embedder sketches
  (:func:`goclaw_memory.passage_sketch.sketcher`): one ``INSERT ... SELECT FROM unnest`` per
  :data:`BATCH` chunks (:func:`write`), each row tied to its chunk's ``chunk_hash`` and the
  embedder's space, and only for chunks still there with that hash (locked against a concurrent
  delete meanwhile, whose trigger then removes the row).
* **Read** by the search's own statement for the winners' rows (a ``LEFT JOIN`` that also
  checks the hash and the space: a sketch of an older text or another model is never used)
  and kept in a small bounded cache (:class:`SketchCache`), from which ``chunk_sketches`` and
  ``passage_cosines`` answer; a chunk without one is scored from its text.
* **Deleted** with their chunks, in the deleting transaction, by the statement-level trigger
  that keeps the statistics (:mod:`goclaw_memory.pg_stats`), which also drops the sketch of a
  chunk whose text changes in place; ``goclaw forget`` deletes any left of the erased agents.
* **Filled** for chunks indexed before (or while the step was off) by ``goclaw memory doctor
  --repair`` (:func:`fill`).

The encoding (:func:`encode`): a header of four little-endian uint16 (segments, references,
passages, flags), then the passages' float32 norms, the segments' uint16 token counts, the
token ids (uint16; uint32 for a vocabulary beyond 65,536), the references (uint8; uint16 past
256 segments) and the passages' uint8 reference counts: about 2 bytes per token.
"""

from __future__ import annotations

import struct
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from goclaw_search.passage_sketches import PassageSketch, SketchBatch

if TYPE_CHECKING:
    from goclaw.contracts.host import Host
    from goclaw.contracts.search import ChunkRecord, Space

__all__ = ["SketchCache", "decode", "encode", "fill", "space_key", "write"]

BATCH = 2000  # chunks sketched and written per statement
_HEAD = struct.Struct("<4H")
_WIDE_REFS, _WIDE_TOKENS = 1, 2  # flags

# Rows only for chunks still there with the hash the sketch was made from (FOR KEY SHARE: a
# delete waits for this transaction, and its trigger then deletes the row written here).
WRITE = (
    "INSERT INTO memory_sketches (agent_id, chunk_id, chunk_hash, space, sketch) "
    "SELECT c.agent_id, c.id, c.chunk_hash, CAST(:space AS text), r.sketch "
    "FROM unnest(CAST(:ids AS bigint[]), CAST(:hashes AS text[]), CAST(:sketches AS bytea[])) "
    "AS r(id, hash, sketch) JOIN memory_chunks c ON c.id = r.id AND c.chunk_hash = r.hash "
    "WHERE c.agent_id = :a FOR KEY SHARE OF c "
    "ON CONFLICT (agent_id, chunk_id) DO UPDATE SET chunk_hash = excluded.chunk_hash, "
    "space = excluded.space, sketch = excluded.sketch"
)
# The join a search's rows statement adds (``%s``: the space key); ``s.sketch`` is NULL without one.
JOIN = (
    " LEFT JOIN memory_sketches s ON s.agent_id = c.agent_id AND s.chunk_id = c.id "
    "AND s.chunk_hash = c.chunk_hash AND s.space = %s"
)
# The erased agents' sketches whose chunk is gone (the trigger deleted the others already).
ORPHANS = (
    "DELETE FROM memory_sketches s WHERE s.agent_id = :a AND NOT EXISTS (SELECT 1 FROM memory_chunks c "
    "WHERE c.id = s.chunk_id AND c.agent_id = s.agent_id AND c.chunk_hash = s.chunk_hash)"
)


def space_key(space: Space) -> str:
    """How ``memory_sketches.space`` names an embedding space."""
    provider, model, dim = space
    return f"{provider}|{model}|{int(dim)}"


def encode(sketch: PassageSketch | None) -> bytes | None:
    """The stored form of a sketch (see the module docstring); None for none, or for one whose
    counts exceed the header's 16 bits (its chunk is then scored from its text)."""
    if sketch is None:
        return None
    n_seg, n_ref, n_pass = len(sketch.seg_len), len(sketch.refs), len(sketch.norms)
    if max(n_seg, n_ref, n_pass) > 0xFFFF:
        return None
    seg_len = np.asarray(sketch.seg_len)
    if n_seg and int(seg_len.max()) > 0xFFFF:
        return None
    refs, tokens = np.asarray(sketch.refs), np.asarray(sketch.tokens)
    flags = 0
    if n_ref and int(refs.max()) > 0xFF:
        flags |= _WIDE_REFS
    if len(tokens) and int(tokens.max()) > 0xFFFF:
        flags |= _WIDE_TOKENS
    return b"".join(
        (
            _HEAD.pack(n_seg, n_ref, n_pass, flags),
            np.asarray(sketch.norms, dtype="<f4").tobytes(),
            seg_len.astype("<u2", copy=False).tobytes(),
            tokens.astype("<u4" if flags & _WIDE_TOKENS else "<u2", copy=False).tobytes(),
            refs.astype("<u2" if flags & _WIDE_REFS else "u1", copy=False).tobytes(),
            np.asarray(sketch.nref).astype("u1", copy=False).tobytes(),
        )
    )


def decode(blob: bytes) -> PassageSketch:
    """The sketch :func:`encode` stored (arrays viewing ``blob``)."""
    n_seg, n_ref, n_pass, flags = _HEAD.unpack_from(blob)
    at = _HEAD.size
    norms = np.frombuffer(blob, "<f4", n_pass, at)
    at += 4 * n_pass
    seg_len = np.frombuffer(blob, "<u2", n_seg, at)
    at += 2 * n_seg
    wide = flags & _WIDE_TOKENS
    n_tok = int(seg_len.sum())
    tokens = np.frombuffer(blob, "<u4" if wide else "<u2", n_tok, at)
    at += (4 if wide else 2) * n_tok
    refs = np.frombuffer(blob, "<u2" if flags & _WIDE_REFS else "u1", n_ref, at)
    at += refs.nbytes
    nref = np.frombuffer(blob, "u1", n_pass, at)
    return PassageSketch(tokens, seg_len, refs, nref, norms)


class SketchCache:
    """The sketches the last searches read, by chunk id (with the agent and space they were read
    for; ``None``: read, and the chunk has none), at most ``size`` of them, the least recently
    read dropped first. Thread-safe."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._items: OrderedDict[int, tuple[str, str, bytes | None]] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, agent_id: str, space: str, found: Iterable[tuple[int, bytes | None]]) -> None:
        with self._lock:
            items = self._items
            for chunk_id, blob in found:
                items[chunk_id] = (agent_id, space, blob)
                items.move_to_end(chunk_id)
            while len(items) > self.size:
                items.popitem(last=False)

    def batch(self, agent_id: str, ids: Sequence[int], space: str) -> SketchBatch:
        """The sketches of these chunks (an id not read for this agent and space: none)."""
        with self._lock:
            got = [self._items.get(int(i)) for i in ids]
        mine = (agent_id, space)
        return SketchBatch.of([decode(g[2]) if g and g[2] and g[:2] == mine else None for g in got])

    def drop(self, agent_id: str | None = None) -> None:
        """Forget the agent's sketches (everyone's when None)."""
        with self._lock:
            if agent_id is None:
                self._items.clear()
            else:
                for k in [k for k, v in self._items.items() if v[0] == agent_id]:
                    del self._items[k]

    def __len__(self) -> int:
        return len(self._items)


def write(
    engine: Host,
    agent_id: str,
    records: Sequence[ChunkRecord],
    space: Space,
    make: Callable[[Sequence[str]], list[Any]],
) -> int:
    """Sketch the chunks ``records`` with ``make`` (:func:`goclaw_memory.passage_sketch.sketcher`)
    and store them, :data:`BATCH` a statement, each batch in a transaction of its own; returns
    how many were written."""
    from sqlalchemy import text

    key, written = space_key(space), 0
    for lo in range(0, len(records), BATCH):
        part = records[lo : lo + BATCH]
        blobs = [encode(s) for s in make([r.text for r in part])]
        rows = [(r, b) for r, b in zip(part, blobs, strict=True) if b is not None]
        if not rows:
            continue
        params = {
            "space": key,
            "a": agent_id,
            "ids": [r.id for r, _b in rows],
            "hashes": [r.chunk_hash for r, _b in rows],
            "sketches": [b for _r, b in rows],
        }
        with engine.db.engine.begin() as c:
            written += c.execute(text(WRITE), params).rowcount
    return written


def fill(engine: Host, agent_id: str, space: Space, make: Callable[[Sequence[str]], list[Any]]) -> int:
    """Sketch the agent's chunks with a vector of ``space`` that have no current sketch of it
    (indexed before sketches were stored, or with the passage step off); returns how many."""
    from sqlalchemy import text

    from goclaw.contracts.search import ChunkRecord

    provider, model, dim = space
    done, last = 0, 0
    while True:
        with engine.db.engine.connect() as c:
            rows = c.execute(
                text(
                    "SELECT c.id, c.chunk_hash, c.text FROM memory_chunks c LEFT JOIN memory_sketches s "
                    "ON s.agent_id = c.agent_id AND s.chunk_id = c.id AND s.chunk_hash = c.chunk_hash "
                    "AND s.space = :sp WHERE c.agent_id = :a AND c.id > :last AND c.embedding_dim = :d "
                    "AND c.embedding_provider = :p AND c.embedding_model = :m AND s.chunk_id IS NULL "
                    "ORDER BY c.id LIMIT :n"
                ),
                {"sp": space_key(space), "a": agent_id, "last": last, "n": BATCH}
                | {"d": int(dim), "p": provider, "m": model},
            ).all()
        if not rows:
            return done
        last = int(rows[-1][0])
        records = [ChunkRecord(int(i), "", "", 0, 0, body or "", h, ()) for i, h, body in rows]
        done += write(engine, agent_id, records, space, make)
