"""An index run reads its files as it goes, not all before its first write; its transactions
start small and grow; its progress counts the files listed (for indexing speed)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.memory_helpers import write


def _agent(make_engine: Any, files: int) -> tuple[Any, Path]:
    eng = make_engine(plugins={"embeddings": {"provider": "none"}})
    agent = eng.agents.create("ada")
    root = Path(eng.agent_dir(agent))
    for i in range(files):
        write(root, f"memory/note-{i:02d}.md", f"Note {i}: the harbour ferry schedule number {i}.\n")
    return eng, root


def test_the_first_write_comes_before_the_last_file_is_read(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from goclaw_memory import index_scan, indexer

    monkeypatch.setattr(index_scan, "BATCH_DOCS", 1)  # a transaction per file
    eng, _root = _agent(make_engine, 8)
    events: list[str] = []
    lock = threading.Lock()
    real_changed = indexer.changed

    def logged_changed(*args: Any, **kwargs: Any) -> Any:
        for p in real_changed(*args, **kwargs):
            with lock:
                events.append("read " + p.file.path)
            yield p

    real_write = indexer.MemoryIndexer._write_batch

    def logged_write(self: Any, agent_id: str, batch: Any, *args: Any, **kwargs: Any) -> None:
        real_write(self, agent_id, batch, *args, **kwargs)
        with lock:
            events.append("wrote " + batch[0].file.path)

    monkeypatch.setattr(indexer, "changed", logged_changed)
    monkeypatch.setattr(indexer.MemoryIndexer, "_write_batch", logged_write)
    report = eng.memory.index("ada")
    assert report.rechunked == 8
    reads = [i for i, e in enumerate(events) if e.startswith("read ")]
    writes = [i for i, e in enumerate(events) if e.startswith("wrote ")]
    assert len(reads) == len(writes) == 8
    assert writes[0] < reads[-1], events  # before: every file was read before the first write
    # each file is written after it was read, in the listing's order
    assert [e[len("wrote ") :] for e in events if e.startswith("wrote ")] == [
        e[len("read ") :] for e in events if e.startswith("read ")
    ]
    assert eng.memory.search("ferry schedule number 7", "ada", channel="lexical")


def test_progress_counts_the_files_listed_unchanged_ones_included(make_engine: Any) -> None:
    eng, root = _agent(make_engine, 6)
    eng.memory.index("ada")
    write(root, "memory/note-02.md", "Note 2 changed: the ferry now leaves at dawn.\n")
    calls: list[tuple[str, int, int]] = []
    report = eng.memory.index("ada", progress=lambda *a: calls.append(a))
    assert report.rechunked == 1 and report.skipped_unchanged == 5
    index_calls = [c for c in calls if c[0] == "index"]
    assert index_calls[0] == ("index", 0, 6) and index_calls[-1] == ("index", 6, 6)
    assert ("index", 3, 6) in index_calls  # note-02 is the listing's 3rd file
    done = [c[1] for c in index_calls]
    assert done == sorted(done)


def test_transactions_start_small_and_double() -> None:
    from goclaw_memory.index_scan import BATCH_CHUNKS, BATCH_FIRST, Pending, batches
    from goclaw_memory.paths import MemoryFile

    text = "x" * 800 * 10  # estimated at 10 chunks a file
    pending = [
        Pending(MemoryFile("", f"memory/{i}.md", f"/nowhere/{i}.md"), text, "h", 1, 0.0, [])
        for i in range(3000)
    ]
    sizes = [10 * len(b) for b in batches(pending)]
    assert sum(sizes) == 30_000
    assert sizes[0] == BATCH_FIRST
    assert sizes[1:4] == [2 * BATCH_FIRST, 4 * BATCH_FIRST, 8 * BATCH_FIRST]
    assert max(sizes) == BATCH_CHUNKS and sizes[-2] == BATCH_CHUNKS
