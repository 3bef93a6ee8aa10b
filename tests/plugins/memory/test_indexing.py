"""Chunking rules, crash safety and the watcher."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from goclaw_memory.chunking import chunk_text
from tests.memory_helpers import write

# --------------------------------------------------------------------------- chunking


def _check_ranges(body: str, max_len: int = 1000) -> list[Any]:
    chunks = chunk_text(body, max_len)
    lines = body.split("\n")
    for c in chunks:
        assert 0 < len(c.text) <= max_len
        assert 1 <= c.start_line <= c.end_line <= len(lines)
        if c.start_line != c.end_line or len(lines[c.start_line - 1]) <= max_len:
            assert "\n".join(lines[c.start_line - 1 : c.end_line]).strip() == c.text
    return chunks


def test_paragraph_break_preferred_once_half_full() -> None:
    p1 = "a" * 300 + "\n" + "b" * 250  # 551 chars: at least half of 1000
    p2 = "c" * 100
    chunks = _check_ranges(f"{p1}\n\n{p2}\n")
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 2), (4, 4)]


def test_short_paragraphs_stay_together() -> None:
    body = "one\n\ntwo\n\nthree\n"
    chunks = _check_ranges(body)
    assert len(chunks) == 1 and (chunks[0].start_line, chunks[0].end_line) == (1, 5)


def test_force_flush_at_max_never_exceeds() -> None:
    body = "\n".join("x" * 90 for _ in range(40))  # no blank lines at all
    chunks = _check_ranges(body)
    assert all(len(c.text) <= 1000 for c in chunks)
    assert sum(c.end_line - c.start_line + 1 for c in chunks) == 40
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 40


def test_long_line_is_split() -> None:
    long = ("word " * 500).strip()  # 2,499 chars on one line
    chunks = _check_ranges(f"intro\n{long}\noutro\n")
    middle = [c for c in chunks if c.start_line == c.end_line == 2]
    assert len(middle) == 3 and all(len(c.text) <= 1000 for c in middle)
    assert " ".join(c.text for c in middle).split() == long.split()
    nospace = "z" * 2500
    pieces = chunk_text(nospace, 1000)
    assert [len(c.text) for c in pieces] == [1000, 1000, 500]


def test_unicode_counts_code_points_and_crlf() -> None:
    body = "é" * 999 + "\r\n" + "ü" * 10
    chunks = chunk_text(body, 1000)
    assert [len(c.text) for c in chunks] == [999, 10]
    assert chunks[0].text == "é" * 999  # the \r is not part of the text


def test_leading_and_trailing_blank_lines() -> None:
    chunks = chunk_text("\n\n\nhello\nworld\n\n\n")
    assert [(c.text, c.start_line, c.end_line) for c in chunks] == [("hello\nworld", 4, 5)]
    assert chunk_text("") == [] and chunk_text("  \n \n") == []


# --------------------------------------------------------------------------- crash safety

KILLED_INDEXER = textwrap.dedent(
    """
    import sys, time
    from goclaw.engine import Engine
    from goclaw_memory import index_scan, indexer

    batches = 0
    original = indexer.MemoryIndexer._write_batch

    def slow(self, *args, **kwargs):
        global batches
        original(self, *args, **kwargs)
        batches += 1
        print("batch", batches, flush=True)
        time.sleep(0.3)  # widen the window; the parent SIGKILLs us meanwhile

    indexer.MemoryIndexer._write_batch = slow
    index_scan.BATCH_DOCS = 10
    eng = Engine.open(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
    eng.memory.index("ada")
    print("finished", flush=True)
    """
)


def _doc_state(eng: Any, agent_id: str) -> dict[str, tuple[str, int, int]]:
    with eng.db.engine.connect() as conn:
        docs = conn.execute(
            text(
                "SELECT d.path, d.content_hash, d.chunk_count, "
                "(SELECT count(*) FROM memory_chunks c WHERE c.document_id = d.id) "
                "FROM memory_documents d WHERE d.agent_id = :a"
            ),
            {"a": agent_id},
        ).all()
    return {r[0]: (r[1], int(r[2]), int(r[3])) for r in docs}


def test_killed_indexer_leaves_previous_index_intact(
    make_engine: Any, workspace: Path, database_url: Any
) -> None:
    eng = make_engine(plugins={"embeddings": {"provider": "none"}})
    eng.agents.create("ada")
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    n = 60
    for i in range(n):
        write(root, f"memory/doc-{i:03d}.md", f"Version one of document {i}: OLDWORD.\n")
    eng.memory.index("ada")
    agent_id = eng.agents.get("ada").id
    for i in range(n):
        write(root, f"memory/doc-{i:03d}.md", f"Version two of document {i}: NEWWORD.\n")
    (workspace / "goclaw.toml").write_text('[plugins.embeddings]\nprovider = "none"\n')
    args = [sys.executable, "-c", KILLED_INDEXER, str(workspace)] + ([database_url] if database_url else [])
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    seen = 0
    deadline = time.monotonic() + 60
    while seen < 2 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith("batch"):
            seen += 1
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    errors = proc.stderr.read() if proc.stderr else ""
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    assert seen == 2, errors
    assert proc.returncode == -signal.SIGKILL

    state = _doc_state(eng, agent_id)
    assert len(state) == n  # nothing lost
    assert all(count == expected for _h, expected, count in state.values())  # every doc whole
    new = eng.memory.search("NEWWORD", "ada", channel="lexical", limit=1000)
    old = eng.memory.search("OLDWORD", "ada", channel="lexical", limit=1000)
    assert 0 < len(new) < n and len(new) + len(old) == n  # part done, the rest still searchable
    assert {h.path for h in new}.isdisjoint({h.path for h in old})

    report = eng.memory.index("ada")  # the next run completes the job
    assert report.rechunked == n - len(new) and report.skipped_unchanged == len(new)
    assert len(eng.memory.search("NEWWORD", "ada", channel="lexical", limit=1000)) == n
    assert eng.memory.search("OLDWORD", "ada", channel="lexical", limit=1000) == []
    if eng.db.backend == "sqlite":
        with eng.db.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar_one() == "ok"
    with eng.db.engine.connect() as conn:  # every chunk carries its terms (the lexical index's source)
        assert conn.exec_driver_sql("SELECT count(*) FROM memory_chunks WHERE lex IS NULL").scalar_one() == 0


# --------------------------------------------------------------------------- watcher


def _wait(predicate: Any, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_watcher_reindexes_changed_files(make_engine: Any) -> None:
    eng = make_engine(plugins={"embeddings": {"provider": "none"}})
    eng.agents.create("ada")
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    write(root, "MEMORY.md", "Initial content.\n")
    eng.memory.index("ada")
    reports: list[Any] = []
    watcher = eng.memory.watch("ada", debounce_ms=300, on_index=reports.append)
    try:
        # A burst of writes is debounced into one re-index.
        for i in range(5):
            write(root, "memory/burst.md", f"Burst write {i} KANGAROO.\n")
            time.sleep(0.02)
        assert _wait(lambda: bool(eng.memory.search("KANGAROO", "ada", channel="lexical")))
        assert "Burst write 4" in eng.memory.search("KANGAROO", "ada", channel="lexical")[0].snippet
        assert _wait(lambda: len(reports) >= 1)
        time.sleep(0.6)
        assert len(reports) == 1
        # Edit, per-user file, rename and delete.
        write(root, "users/u9/memory/p.md", "User nine likes PLATYPUS.\n")
        assert _wait(lambda: bool(eng.memory.search("PLATYPUS", "ada", "u9", channel="lexical")))
        (root / "memory/burst.md").rename(root / "memory/renamed.md")
        assert _wait(
            lambda: (
                [h.path for h in eng.memory.search("KANGAROO", "ada", channel="lexical")]
                == ["memory/renamed.md"]
            )
        )
        (root / "memory/renamed.md").unlink()
        assert _wait(lambda: eng.memory.search("KANGAROO", "ada", channel="lexical") == [])
        write(root, "memory/notes.txt", "not memory WALLABY\n")
        time.sleep(0.8)
        assert eng.memory.search("WALLABY", "ada", channel="lexical") == []
    finally:
        watcher.stop()
    assert not watcher.errors


@pytest.mark.parametrize("backend", ["sqlite"], indirect=False)
def test_watch_setting_starts_a_watcher(workspace: Path, backend: str) -> None:
    from goclaw.engine import Engine

    eng = Engine.open(
        workspace,
        plugins={"embeddings": {"provider": "none"}, "memory": {"watch": True, "watch_debounce_ms": 100}},
    )
    try:
        eng.agents.create("ada")
        eng.close()
        eng = Engine.open(
            workspace,
            plugins={"embeddings": {"provider": "none"}, "memory": {"watch": True, "watch_debounce_ms": 100}},
        )
        root = Path(eng.agent_dir(eng.agents.get("ada")))
        write(root, "MEMORY.md", "Watched at start: QUOKKA.\n")
        assert _wait(lambda: bool(eng.memory.search("QUOKKA", "ada", channel="lexical")))
    finally:
        eng.close()


def test_query_terms_drop_stopwords_unless_nothing_else() -> None:
    from goclaw_search.tokenize import query_terms

    assert query_terms("What did we decide about the DATABASE?") == ["decid", "databas"]
    assert query_terms("the") == ["the"]  # nothing but stopwords: keep them
