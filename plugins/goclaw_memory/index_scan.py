"""Reading the memory files of an index run (spec §14): which files changed since the last run.

Each file is read once, hashed (SHA-256, first 16 bytes) and skipped when the hash is the one
indexed; a file the index cannot hold (an undecodable name, a path too long, NUL bytes) is
reported, never fatal (issue 12).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from goclaw_memory.chunking import TextChunk, content_hash
from goclaw_memory.paths import MemoryFile, scope_files

if TYPE_CHECKING:
    from pathlib import Path

Progress = Callable[[str, int, int], None]

MAX_PATH = 1024  # memory_documents.path / memory_chunks.path are VARCHAR(1024)
# Documents / chunks per transaction at most. Each SQLite commit of a bulk load passes the WAL's
# auto-checkpoint size (1,000 pages), so fewer, larger transactions mean fewer checkpoints and
# fixed costs (10,000 synthetic chunks: 9 transactions took 0.59-0.66 s, 2 took 0.34-0.39 s);
# a transaction of 5,000 chunks holds the write lock for a fraction of a second.
BATCH_DOCS = 1000
BATCH_CHUNKS = 5000


@dataclass
class IndexReport:
    """What one ``index`` run did (the CLI's summary)."""

    agent: str
    files_scanned: int = 0
    skipped_unchanged: int = 0
    rechunked: int = 0
    removed: int = 0
    chunks_written: int = 0
    chunks_embedded: int = 0
    cache_hits: int = 0
    reembedded: int = 0
    embedding: str | None = None  # "provider/model (dim)" or None
    embedding_error: str | None = None
    seconds: float = 0.0
    changed_paths: list[str] = field(default_factory=list)
    # Files that cannot be indexed, each {"path", "reason"}: reported, never fatal (issue 12).
    skipped_files: list[dict[str, str]] = field(default_factory=list)

    def skip(self, path: str, reason: str) -> None:
        self.skipped_files.append({"path": printable_path(path), "reason": reason})

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def merge(self, other: IndexReport) -> None:
        for name in (
            "files_scanned",
            "skipped_unchanged",
            "rechunked",
            "removed",
            "chunks_written",
            "chunks_embedded",
            "cache_hits",
            "reembedded",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.changed_paths.extend(other.changed_paths)
        self.skipped_files.extend(other.skipped_files)
        self.embedding = self.embedding or other.embedding
        self.embedding_error = self.embedding_error or other.embedding_error


@dataclass
class Pending:
    """A file to (re-)index: its text, hash and, once chunked, its chunks."""

    file: MemoryFile
    text: str
    hash: str
    size: int
    mtime: float
    chunks: list[TextChunk]


def printable_path(path: str) -> str:
    """A path as text that can be printed and stored: an undecodable byte of a file name (kept
    by Python as a lone surrogate) shows as ``\\xNN``."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def unindexable_name(path: str) -> str | None:
    """Why a file's path cannot be a row in the index, or None."""
    if printable_path(path) != path:
        return "file name is not valid UTF-8"
    if len(path) > MAX_PATH:
        return f"path longer than {MAX_PATH:,} characters"
    return None


def scan(
    agent_dir: Path,
    scopes: Sequence[str],
    existing: dict[tuple[str, str], tuple[int, str]],
    report: IndexReport,
) -> tuple[list[Pending], set[tuple[str, str]]]:
    """The files of ``scopes`` whose content differs from the index (``existing``: (user, path)
    -> (document id, hash)), and the (user, path) of every file seen."""
    pending: list[Pending] = []
    seen: set[tuple[str, str]] = set()
    for scope in scopes:
        for f in scope_files(agent_dir, scope):
            report.files_scanned += 1
            bad_name = unindexable_name(f.path)
            if bad_name is not None:
                report.skip(f.path, bad_name)
                continue
            seen.add((f.user_id, f.path))
            try:
                with open(f.abs, "rb") as fh:
                    raw = fh.read()
                    stat = os.fstat(fh.fileno())
            except OSError:
                continue  # vanished or unreadable between listing and reading
            if b"\x00" in raw:  # PostgreSQL's text refuses NUL; same rule on SQLite
                report.skip(f.path, "contains NUL bytes (not a text file)")
                continue
            text = raw.decode("utf-8", errors="replace")
            digest = content_hash(text)
            old = existing.get((f.user_id, f.path))
            if old is not None and old[1] == digest:
                report.skipped_unchanged += 1
                continue
            pending.append(Pending(f, text, digest, stat.st_size, stat.st_mtime, []))
    return pending, seen


def estimated_chunks(pending: Sequence[Pending]) -> int:
    """About how many chunks these files make (:func:`batches`' estimate, before chunking)."""
    return sum(max(1, len(p.text) // 800) for p in pending)


def batches(pending: Sequence[Pending]) -> Iterable[list[Pending]]:
    """``pending`` in transactions of at most :data:`BATCH_DOCS` files and about
    :data:`BATCH_CHUNKS` chunks."""
    batch: list[Pending] = []
    size = 0
    for p in pending:
        estimate = max(1, len(p.text) // 800)
        if batch and (len(batch) >= BATCH_DOCS or size + estimate > BATCH_CHUNKS):
            yield batch
            batch, size = [], 0
        batch.append(p)
        size += estimate
    if batch:
        yield batch
