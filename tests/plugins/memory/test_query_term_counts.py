"""A query that repeats a word counts it as often in BM25 (as Lucene and bm25s do), on every
built-in backend: the repeated word's documents outrank a rarer word said once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from goclaw_search.tokenize import query_term_counts, query_terms
from tests.memory_helpers import open_with_backend, write


def test_query_counts_keep_the_first_occurrence_order() -> None:
    terms, counts = query_term_counts("Ferry times: the ferry, the FERRY and the kettle")
    assert terms == query_terms("Ferry times: the ferry, the FERRY and the kettle")
    assert dict(zip(terms, counts, strict=True)) == {"ferri": 3, "time": 1, "kettl": 1}
    assert query_term_counts("") == ([], [])
    assert query_term_counts("the and of") == (["the", "and", "of"], [1, 1, 1])  # stopwords only


def _ranked(eng: Any, query: str) -> list[str]:
    return [h.path for h in eng.memory.search(query, "ada", channel="lexical", limit=3)]


@pytest.mark.parametrize("search_backend", ["sqlite_or_inprocess", "postgresql"])
def test_a_repeated_query_word_weighs_as_often(
    search_backend: str, backend: str, database_url: str | None, workspace: Path
) -> None:
    if search_backend == "postgresql" and backend != "postgresql":
        pytest.skip("the postgresql search backend needs PostgreSQL")
    in_memory = "sqlite" if backend == "sqlite" else "inprocess"
    chosen = in_memory if search_backend == "sqlite_or_inprocess" else "postgresql"
    eng = open_with_backend(database_url, workspace, chosen)
    try:
        eng.plugin_settings("memory").rerank = "none"
        eng.agents.create("ada")
        root = Path(eng.agent_dir(eng.agents.get("ada")))
        # One note names the kettle, two the ferry: "kettle" is the rarer word (higher IDF).
        write(root, "memory/a.md", "The kettle whistles.\n")
        write(root, "memory/b.md", "The ferry leaves.\n")
        write(root, "memory/c.md", "The ferry docks.\n")
        for i in range(3):
            write(root, f"memory/other{i}.md", f"Nothing here but the garden, note {i}.\n")
        eng.memory.index("ada")
        assert _ranked(eng, "kettle ferry")[0] == "memory/a.md"  # once each: the rarer word wins
        # Said twice, the ferry's weight passes the kettle's (2 x 1.03 > 1.54 in IDF).
        assert _ranked(eng, "kettle ferry ferry")[0] in ("memory/b.md", "memory/c.md")
        assert "memory/a.md" in _ranked(eng, "kettle ferry ferry")  # still found
    finally:
        eng.close()


def test_counts_that_do_not_match_the_terms_count_each_term_once() -> None:
    """A backend that rewrites a query's terms without their counts (as plugins written before
    the counts did) gets every term once, not an error."""
    from dataclasses import replace

    from goclaw.contracts.search import SearchQuery

    query = SearchQuery("a", ("",), "ferry ferry", ("ferri",), None, None, 5, term_counts=(2,))
    assert query.counts() == (2,)
    rewritten = replace(query, text="ferry ferry boat", terms=("ferri", "boat"))
    assert rewritten.counts() == (1, 1)
    assert replace(query, term_counts=()).counts() == (1,)
