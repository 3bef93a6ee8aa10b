"""Chunks keep their heading path: indexed with the chunk, never shown in its snippet; a heading
never stands alone; an index made by an older chunker is re-chunked by the next run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from goclaw_memory.chunking import chunk_text, content_hash, document_hash, heading
from tests.memory_helpers import write

ABSTRACT = " ".join(f"Sentence {i} of the abstract describes the measured effect." for i in range(25))


def test_heading_lines_are_recognised() -> None:
    assert heading("# Title") == (1, "Title")
    assert heading("### Deep section ###") == (3, "Deep section")
    assert heading("#hashtag") is None and heading("#") is None and heading("    # code") is None


def test_a_title_joins_the_first_piece_of_a_long_paragraph() -> None:
    body = f"# Statins and breast cancer survival\n\n{ABSTRACT}\n"
    chunks = chunk_text(body, 1000)
    assert chunks[0].start_line == 1 and chunks[0].text.startswith("# Statins")
    assert chunks[0].text != "# Statins and breast cancer survival"  # not alone
    assert all(len(c.text) <= 1000 for c in chunks)
    assert [c.context for c in chunks[1:]] == ["Statins and breast cancer survival"] * (len(chunks) - 1)
    assert chunks[1].indexed == f"Statins and breast cancer survival\n{chunks[1].text}"
    assert chunks[0].context == "" and chunks[0].indexed == chunks[0].text


def test_the_heading_path_and_section_boundaries() -> None:
    body = (
        "# Runbook\n\nIntro line.\n\n## Deploys\n\n"
        + "\n".join(f"- deploy step {i} checks the gateway" for i in range(12))
        + "\n\n## Rollbacks\n\n"
        + "\n".join(f"- rollback step {i} restores the gateway" for i in range(12))
        + "\n\n```\n# a comment, not a heading\n```\n"
    )
    chunks = chunk_text(body, 300)
    # a heading a chunk would end with moves to the next chunk, beside the lines it heads
    for c in chunks:
        last = c.text.split("\n")[-1]
        assert heading(last) is None or c.end_line == len(body.split("\n")), c
    rollback = next(c for c in chunks if "rollback step 11" in c.text)
    assert rollback.context in ("Runbook", "Runbook > Rollbacks")
    assert chunks[-1].context == "Runbook > Rollbacks"  # the fenced comment is no heading
    # snippets are the file's own lines
    lines = body.split("\n")
    for c in chunks:
        assert "\n".join(lines[c.start_line - 1 : c.end_line]).strip() == c.text


@pytest.fixture
def backend() -> str:
    return "sqlite"


def test_words_split_between_title_and_body_find_the_body_chunk(make_engine: Any) -> None:
    eng = make_engine()
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    tail = "The cohort of 31,236 women was followed for a median of 3.25 years."
    write(root, "memory/statins.md", f"# Statin use and breast cancer survival\n\n{ABSTRACT} {tail}\n")
    for i in range(5):
        write(root, f"memory/n{i}.md", f"# Note {i}\n\nA cohort of {i} patients was followed for years.\n")
    eng.memory.index("ada")
    hits = eng.memory.search("statin cohort followed median years", "ada", channel="lexical")
    assert hits[0].path == "memory/statins.md"
    assert "Statin" in hits[0].snippet and tail in hits[0].snippet  # the file's own lines


def test_an_index_made_before_the_chunk_format_is_rechunked(make_engine: Any) -> None:
    eng = make_engine()
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    body = f"# Statin use\n\n{ABSTRACT}\n"
    write(root, "memory/statins.md", body)
    eng.memory.index("ada")
    assert eng.memory.index("ada").rechunked == 0  # unchanged
    with eng.db.engine.begin() as c:  # as an older release stored it: the text's hash alone
        c.execute(text("UPDATE memory_documents SET content_hash = :h"), {"h": content_hash(body)})
        c.execute(text("UPDATE memory_chunks SET lex = 'stale'"))
    report = eng.memory.index("ada")
    assert report.rechunked == 1
    with eng.db.engine.connect() as c:
        stored = c.execute(text("SELECT content_hash FROM memory_documents")).scalar_one()
        lexes = [r[0] for r in c.execute(text("SELECT lex FROM memory_chunks"))]
    assert stored == document_hash(body) and "stale" not in lexes
    assert all("statin" in lex.split() for lex in lexes)  # every chunk carries the title's terms


def test_reembedding_keeps_the_heading_path(make_engine: Any) -> None:
    """After a model switch, a chunk's new vector is of its heading path and text, as a fresh
    index run would make it."""
    from goclaw_memory.index_writes import as_float32
    from tests.memory_helpers import EmbedderPlugin

    plugin = EmbedderPlugin()
    eng = make_engine(extra_plugins=[("testemb", plugin)])
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    body = f"# Statin use\n\n{ABSTRACT}\n"
    write(root, "memory/statins.md", body)
    eng.memory.index("ada")
    other = make_engine(extra_plugins=[("testemb", plugin)], plugins={"embeddings": {"provider": "hash"}})
    assert other.memory.index("ada").reembedded == len(chunk_text(body))
    with other.db.engine.connect() as c:
        stored = {
            (int(a), int(b)): as_float32(v).tolist()
            for a, b, v in c.execute(text("SELECT start_line, end_line, embedding FROM memory_chunks"))
        }
    for chunk in chunk_text(body):
        want = plugin.hash.embed([chunk.indexed])[0]
        assert stored[(chunk.start_line, chunk.end_line)] == pytest.approx(list(want), abs=1e-6)
    assert any(chunk.context for chunk in chunk_text(body))
