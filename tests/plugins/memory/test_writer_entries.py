"""Memories added through the API are searched and shown as themselves: one chunk (one hit)
per entry, never their ``<!-- goclaw-memory ... -->`` marker lines, and an identical memory
is stored once."""

from __future__ import annotations

from typing import Any

import pytest

from goclaw.contracts.hooks import PromptRequest
from goclaw.contracts.host import PromptContext
from goclaw.contracts.tools import ToolContext
from goclaw_episodic.autoinject import MemoryContextSection
from goclaw_memory.chunking import chunk_text, without_markers

FACTS = [
    "The deploy window is Thursday afternoon.",
    "Staging lives on host kiwi.",
    "The release train leaves every second Monday.",
    "Rollbacks need a second reviewer.",
]


@pytest.fixture
def eng(engine: Any) -> Any:
    engine.agents.create("ada")
    for fact in FACTS:
        engine.memory.writer.add("ada", fact, tags=["ops"], day="2026-12-01")
    return engine


def test_chunks_end_at_entry_markers_and_snippets_leave_the_markers_out() -> None:
    m1 = "<!-- goclaw-memory id=mem_0123456789 added=2026-12-01T10:00:00Z tags=ops -->"
    m2 = "<!-- goclaw-memory id=mem_abcdef0123 added=2026-12-01T11:00:00Z -->"
    text = f"# Notes\n\nfree text\n\n{m1}\nfirst entry\n\n{m2}\nsecond entry\nits second line\n"
    got = [(c.start_line, c.end_line, c.text) for c in chunk_text(text, 1000)]
    assert got == [
        (1, 3, "# Notes\n\nfree text"),
        (5, 6, f"{m1}\nfirst entry"),  # the marker starts its entry's chunk (filters read it)
        (8, 10, f"{m2}\nsecond entry\nits second line"),
    ]
    assert [without_markers(c.text) for c in chunk_text(text, 1000)][1:] == [
        "first entry",
        "second entry\nits second line",
    ]
    # a marker-looking line inside text is text; a long entry still splits at the maximum
    assert chunk_text("see <!-- goclaw-memory id=x -->\nmore", 1000)[0].text.startswith("see <!--")
    long = "<!-- goclaw-memory id=mem_0123456789 added=x -->\n" + "\n".join(["word " * 30] * 10)
    chunks = chunk_text(long, 400)
    assert chunks[0].start_line == 1 and len(chunks) > 1
    assert all("goclaw-memory" not in without_markers(c.text) for c in chunks)


def test_each_entry_is_its_own_hit_without_its_marker(eng: Any) -> None:
    hits = eng.tools.call("memory_search", {"query": "staging host kiwi"}, ToolContext(agent="ada"))
    top = hits.data["hits"][0]
    assert top["snippet"] == "Staging lives on host kiwi."
    assert (top["start_line"], top["end_line"]) == (4, 5)  # the entry, marker line included
    assert "goclaw-memory" not in hits.text and "mem_" not in hits.text
    for hit in eng.memory.search("deploy release rollbacks staging", "ada", channel="lexical", limit=10):
        assert hit.snippet in FACTS  # one entry per hit, never two
    got = eng.tools.call("memory_get", {"id": top["id"]}, ToolContext(agent="ada"))
    assert got.text.endswith("\nStaging lives on host kiwi.") and "goclaw-memory" not in got.text
    # the hit id names the whole entry: correcting through it keeps the entry and its id
    entry = next(e for e in eng.memory.writer.list("ada") if e.text == FACTS[1])
    eng.memory.writer.correct("ada", "Staging lives on host lime.", id=top["id"])
    assert [e.text for e in eng.memory.writer.list("ada") if e.id == entry.id] == [
        "Staging lives on host lime."
    ]


def test_the_memory_context_shows_no_marker(eng: Any) -> None:
    agent = eng.agents.get("ada")
    request = PromptRequest(agent="ada", message="When is the deploy window on Thursday?")
    section = MemoryContextSection().render(
        PromptContext(engine=eng, request=request, agent=agent, user="", mode="full")
    )
    assert section is not None and "deploy window is Thursday afternoon" in section
    assert "goclaw-memory" not in section and "Staging" not in section


def test_an_identical_memory_is_stored_once(eng: Any) -> None:
    w = eng.memory.writer
    first = w.list("ada", tag="ops")[-1]
    again = w.add("ada", "  The deploy   window is Thursday afternoon.\n", tags=["ops"], day="2026-12-03")
    assert again.id == first.id and again.existing and again.as_json()["existing"] is True
    assert len(w.list("ada")) == len(FACTS)
    assert not (eng.agent_dir(eng.agents.get("ada")) / "memory/2026-12-03.md").exists()
    # not identical: other words or case, other tags, other metadata, another scope
    for text, kw in (
        ("The deploy window is Thursday morning.", {"tags": ["ops"]}),
        ("the deploy window is thursday afternoon.", {"tags": ["ops"]}),
        ("The deploy window is Thursday afternoon.", {}),
        ("The deploy window is Thursday afternoon.", {"tags": ["ops"], "metadata": {"source": "chat"}}),
        ("The deploy window is Thursday afternoon.", {"tags": ["ops"], "user": "alice"}),
    ):
        entry = w.add("ada", text, day="2026-12-03", **kw)
        assert not entry.existing and "existing" not in entry.as_json()
    assert len(w.list("ada")) == len(FACTS) + 4
    tool = eng.tools.call(
        "memory_add", {"text": "Staging lives on host kiwi.", "tags": ["ops"]}, ToolContext(agent="ada")
    )
    assert tool.text.startswith("already stored as mem_")
