"""Search filters inside a search backend: tags, dates, path prefix and scope, with ``limit``
counting the hits that pass. Part of the backend suite:
:mod:`goclaw_memory.testing.backend_suite` imports these, so every module that runs the suite
(SQLite, in-process, PostgreSQL, LanceDB, the from-scratch minisearch) runs them too, with its
``eng`` fixture."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from goclaw_memory.testing.helpers import write


def _ada(eng: Any) -> Path:
    return Path(eng.agent_dir(eng.agents.get("ada")))


def _paths(hits: Any) -> list[str]:
    return [h.path for h in hits]


def test_filter_by_tags_counts_only_tagged_hits(eng: Any) -> None:
    root = _ada(eng)
    for i in range(6):  # untagged notes that match the query better than the tagged ones
        write(root, f"memory/notes-{i}.md", f"# Ferry {i}\n\nThe harbour ferry ferry timetable, copy {i}.\n")
    eng.memory.index("ada")
    writer = eng.memory.writer
    # one entry per file (entries of one file can share a chunk, and a chunk has their tags)
    first = writer.add("ada", "The harbour ferry leaves from pier 3.", tags=["travel"], day="2026-03-01")
    writer.add("ada", "Pack a coat for the ferry.", tags=["travel", "packing"], day="2026-03-02")
    writer.add("ada", "The ferry cafe sells tea.", tags=["food"], day="2026-03-03")
    hits = eng.memory.search("harbour ferry", "ada", limit=2, filters={"tags": ["travel"]})
    assert len(hits) == 2  # both tagged entries, though six untagged chunks score higher
    assert sorted(_paths(hits)) == ["memory/2026-03-01.md", "memory/2026-03-02.md"]
    assert first.path == "memory/2026-03-01.md"
    both = eng.memory.search("ferry", "ada", limit=5, filters={"tags": ["travel", "packing"]})
    assert [("coat" in h.snippet) for h in both] == [True]
    assert eng.memory.search("ferry", "ada", filters={"tags": "missing"}) == []


def test_filter_by_date_range_reads_file_and_entry_dates(eng: Any) -> None:
    root = _ada(eng)
    write(root, "memory/2026-01-05.md", "The lighthouse keeper changed the lamp.\n")
    write(root, "memory/2026-02-10.md", "The lighthouse got a new lamp again.\n")
    write(root, "MEMORY.md", "# Facts\n\nThe lighthouse lamp is blue.\n")
    eng.memory.index("ada")
    jan = eng.memory.search("lighthouse lamp", "ada", filters={"until": "2026-01-31"})
    assert _paths(jan) == ["memory/2026-01-05.md"]
    feb = eng.memory.search("lighthouse lamp", "ada", filters={"since": "2026-02-01", "until": "2026-02-10"})
    assert _paths(feb) == ["memory/2026-02-10.md"]
    everything = eng.memory.search("lighthouse lamp", "ada", filters={"since": "2000-01-01"})
    assert sorted(_paths(everything)) == ["memory/2026-01-05.md", "memory/2026-02-10.md"]  # undated: out
    # an entry's own day dates its chunk, in a file without a date in its name
    marker = "<!-- goclaw-memory id=mem_0123456789 added=2026-04-01T10:00:00Z tags=lamp -->"
    write(root, "memory/lamps.md", f"{marker}\nThe lighthouse lamp was polished.\n")
    eng.memory.index("ada")
    found = eng.memory.search(
        "lighthouse lamp", "ada", filters={"since": "2026-03-01", "until": "2026-04-30"}
    )
    assert _paths(found) == ["memory/lamps.md"]


def test_filter_by_path_prefix_and_scope(eng: Any) -> None:
    root = _ada(eng)
    write(root, "MEMORY.md", "The garden gnome is called Rupert.\n")
    write(root, "memory/projects/gnome.md", "Rupert the gnome needs new paint.\n")
    write(root, "users/alice/memory/gnome.md", "Alice painted Rupert the gnome red.\n")
    write(root, "users/alice/MEMORY.md", "Alice owns a second gnome.\n")
    eng.memory.index("ada")
    assert _paths(eng.memory.search("gnome Rupert", "ada", filters={"path": "memory/projects/"})) == [
        "memory/projects/gnome.md"
    ]
    mine = eng.memory.search("gnome Rupert", "ada", "alice", filters={"path": "memory/"})
    assert sorted(_paths(mine)) == ["memory/projects/gnome.md", "users/alice/memory/gnome.md"]
    shown = eng.memory.search("gnome", "ada", "alice", filters={"path": "users/alice/"})
    assert sorted(_paths(shown)) == ["users/alice/MEMORY.md", "users/alice/memory/gnome.md"]
    agent = eng.memory.search("gnome", "ada", "alice", filters={"scope": "agent"})
    assert agent and all(h.scope == "agent" for h in agent)
    user = eng.memory.search("gnome", "ada", "alice", filters={"scope": "user"}, limit=1)
    assert [h.scope for h in user] == ["user"]
