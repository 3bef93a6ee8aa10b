"""Reading the memory files of an index run: which files changed since the last run.

Each file is read once, hashed (SHA-256, first 16 bytes) and skipped when the hash is the one
indexed; a file the index cannot hold (an undecodable name, a path too long, NUL bytes) is
reported, never fatal.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from goclaw_memory.chunking import TextChunk, document_hash
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
# The first transaction is small and each next one doubles (500, 1,000, 2,000, 4,000, 5,000...):
# the run's stages (reading, tokenizing, writing) overlap, so the writer starts after a small
# batch is read and tokenized, not a full one (10,000 chunks: 2 batches of ~5,000 left the
# writer idle for the first ~0.2 s of a ~0.8 s run).
BATCH_FIRST = 500


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
    # Files that cannot be indexed, each {"path", "reason"}: reported, never fatal.
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
    done: int = 0  # files of the run's listing up to this one (its progress once written)


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


def listing(agent_dir: Path, scopes: Sequence[str]) -> list[MemoryFile]:
    """The memory files of ``scopes``, in the order a run reads them (nothing is read yet)."""
    return [f for scope in scopes for f in scope_files(agent_dir, scope)]


def changed(
    files: Sequence[MemoryFile],
    existing: dict[tuple[str, str], tuple[int, str]],
    report: IndexReport,
    seen: set[tuple[str, str]],
) -> Iterator[Pending]:
    """The files whose content differs from the index (``existing``: (user, path) -> (document
    id, hash)), read one at a time as they are asked for; the (user, path) of every file read
    goes into ``seen``. Each one's ``done`` counts the files of ``files`` up to it."""
    for done, f in enumerate(files, start=1):
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
        digest = document_hash(text)
        old = existing.get((f.user_id, f.path))
        if old is not None and old[1] == digest:
            report.skipped_unchanged += 1
            continue
        yield Pending(f, text, digest, stat.st_size, stat.st_mtime, [], done)


def scan(
    agent_dir: Path,
    scopes: Sequence[str],
    existing: dict[tuple[str, str], tuple[int, str]],
    report: IndexReport,
) -> tuple[list[Pending], set[tuple[str, str]]]:
    """:func:`changed` of the :func:`listing`, all read at once, and the (user, path) of every
    file seen."""
    seen: set[tuple[str, str]] = set()
    return list(changed(listing(agent_dir, scopes), existing, report, seen)), seen


def estimate(p: Pending) -> int:
    """About how many chunks a file makes (before chunking)."""
    return max(1, len(p.text) // 800)


def estimated_chunks(pending: Iterable[Pending]) -> int:
    """About how many chunks these files make (:func:`batches`' estimate, before chunking)."""
    return sum(map(estimate, pending))


def batches(pending: Iterable[Pending]) -> Iterator[list[Pending]]:
    """``pending`` in transactions of at most :data:`BATCH_DOCS` files and about
    :data:`BATCH_CHUNKS` chunks; the first about :data:`BATCH_FIRST` chunks, each next one
    twice the last up to that."""
    batch: list[Pending] = []
    size = 0
    cap = BATCH_FIRST
    for p in pending:
        chunks = estimate(p)
        if batch and (len(batch) >= BATCH_DOCS or size + chunks > cap):
            yield batch
            batch, size = [], 0
            cap = min(BATCH_CHUNKS, 2 * cap)
        batch.append(p)
        size += chunks
    if batch:
        yield batch
