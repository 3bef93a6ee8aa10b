"""``limit`` counts distinct results: chunks of one file region are one hit; a one-channel
search returns that channel's own ranking."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from goclaw_memory.chunking import chunk_text
from tests.memory_helpers import write


@pytest.fixture
def backend() -> str:
    """Merging happens in the memory service, the same on every backend."""
    return "sqlite"


def _agent(make_engine: Any, **memory: Any) -> tuple[Any, Path]:
    eng = make_engine(plugins={"memory": memory} if memory else None)
    return eng, Path(eng.agent_dir(eng.agents.create("ada")))


LONG = (
    "# Kestrel gateway\n\n"
    + " ".join(f"The Kestrel gateway certificate rotation step {i} is logged." for i in range(30))
    + "\n"
)


def test_adjacent_chunks_of_one_file_are_one_hit_with_the_region(make_engine: Any) -> None:
    eng, root = _agent(make_engine)
    write(root, "memory/long.md", LONG)
    for i in range(4):
        write(root, f"memory/other{i}.md", f"Kestrel gateway note {i} about the certificate.\n")
    eng.memory.index("ada")
    assert len(chunk_text(LONG)) >= 2  # the file is more than one chunk
    hits = eng.memory.search("Kestrel gateway certificate rotation", "ada", limit=3)
    assert len(hits) == 3 and len({h.path for h in hits}) == 3
    long = next(h for h in hits if h.path == "memory/long.md")
    assert (long.start_line, long.end_line) == (1, 3)
    # the snippet is the file's own text
    assert long.snippet.split() == LONG.split()


def test_separate_regions_of_one_file_stay_separate_hits(make_engine: Any) -> None:
    eng, root = _agent(make_engine)
    filler = "\n\n".join(f"Unrelated paragraph {i} about lunch menus and parking." for i in range(40))
    body = f"Kestrel gateway certificate expired.\n\n{filler}\n\nKestrel gateway certificate renewed.\n"
    write(root, "memory/log.md", body)
    eng.memory.index("ada")
    hits = eng.memory.search("Kestrel gateway certificate", "ada", limit=5, channel="lexical")
    regions = sorted((h.start_line, h.end_line) for h in hits if h.path == "memory/log.md")
    assert len(regions) == 2 and regions[0][1] < regions[1][0] - 2


@pytest.mark.parametrize("channel", ["lexical", "vector"])
def test_one_channel_search_returns_its_own_ranking(make_engine: Any, channel: str) -> None:
    """The built-in reranker (on by default) leaves a one-channel search's order alone."""
    write_notes = {
        "memory/near.md": "N\n\nThe Kestrel gateway certificate expired.\n",
        "memory/far.md": "F\n\n"
        + " ".join(["Kestrel"] + ["rollout"] * 6 + ["gateway"] + ["notes"] * 6 + ["certificate"]) * 2
        + "\n",
        "memory/other.md": "O\n\nKestrel only.\n",
    }
    eng, root = _agent(make_engine, rerank="none")
    for rel, body in write_notes.items():
        write(root, rel, body)
    eng.memory.index("ada")
    q = "Kestrel gateway certificate"
    own = [(h.path, h.score) for h in eng.memory.search(q, "ada", channel=channel)]
    eng.plugin_settings("memory").rerank = "overlap"
    assert own and [(h.path, h.score) for h in eng.memory.search(q, "ada", channel=channel)] == own


def test_a_chunk_between_two_regions_joins_them() -> None:
    from goclaw_memory.hybrid import MemoryHit, distinct

    def hit(start: int, end: int, score: float) -> MemoryHit:
        return MemoryHit("memory/a.md", start, end, score, "agent", f"lines {start}-{end}", chunk_id=start)

    found = distinct([hit(1, 5, 0.9), hit(13, 19, 0.8), hit(6, 12, 0.7), hit(30, 31, 0.6)], 2)
    assert [(h.start_line, h.end_line, h.score) for h in found] == [(1, 19, 0.9), (30, 31, 0.6)]
    assert found[0].snippet == "lines 1-5\nlines 6-12\nlines 13-19"


def test_a_hit_holds_at_most_max_merged_chunks() -> None:
    from goclaw_memory.hybrid import MAX_MERGED, MemoryHit, distinct

    chunks = [
        MemoryHit("memory/a.md", 10 * i + 1, 10 * i + 10, 1 - i / 100, "agent", f"c{i}", chunk_id=i + 1)
        for i in range(MAX_MERGED + 2)
    ]
    found = distinct(chunks, 2)
    assert (found[0].start_line, found[0].end_line) == (1, 10 * MAX_MERGED)
    # the next chunk adjoins a full region: left out, it takes no place of its own
    assert [(h.start_line, h.end_line) for h in found[1:]] == [(10 * MAX_MERGED + 11, 10 * MAX_MERGED + 20)]
