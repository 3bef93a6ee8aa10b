"""``region_penalty``: a file's second region (chunks neither overlapping nor next to its
better one) is scored down after the reranker, in the memory service, so every backend (SQLite,
the in-process engine on PostgreSQL, the ``postgresql`` backend) ranks alike; ``limit`` still
counts distinct hits, and a one-channel search keeps its own ranking."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.memory_helpers import write

FILLER = "\n\n".join(f"Unrelated paragraph {i} about lunch menus and parking." for i in range(40))
NOTES = {
    # two separate regions of one file, each with every query term
    "memory/log.md": f"Kestrel gateway certificate expired.\n\n{FILLER}\n\n"
    "Kestrel gateway certificate renewed.\n",
    "memory/b.md": "The Kestrel gateway was moved to rack 4.\n",
    "memory/c.md": "Kestrel gateway firmware notes.\n",
}


@pytest.fixture(params=["in-memory", pytest.param("postgresql", marks=pytest.mark.postgres)])
def search_backend(request: pytest.FixtureRequest, backend: str) -> str:
    """The in-memory engine (``sqlite`` on SQLite, ``inprocess`` on PostgreSQL) or ``postgresql``."""
    if request.param == "postgresql" and backend != "postgresql":
        pytest.skip("the postgresql search backend needs a PostgreSQL database")
    if request.param == "in-memory":
        return "sqlite" if backend == "sqlite" else "inprocess"
    return str(request.param)


def _engine(make_engine: Any, search_backend: str) -> Any:
    eng = make_engine(plugins={"memory": {"backend": search_backend}})
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    for rel, body in NOTES.items():
        write(root, rel, body)
    eng.memory.index("ada")
    return eng


def _places(eng: Any, **kwargs: Any) -> list[tuple[str, int]]:
    hits = eng.memory.search("Kestrel gateway certificate", "ada", **kwargs)
    return [(h.path, h.start_line) for h in hits]


def test_a_files_second_region_comes_after_other_files_best(make_engine: Any, search_backend: str) -> None:
    eng = _engine(make_engine, search_backend)
    plain = _places(eng, limit=3)
    assert [p for p, _s in plain][:2] == ["memory/log.md", "memory/log.md"]
    eng.plugin_settings("memory").region_penalty = 0.0
    shown = [p for p, _s in _places(eng, limit=3)]
    assert shown[0] == "memory/log.md" and sorted(shown[1:]) == ["memory/b.md", "memory/c.md"]
    # the second region is still found, after every file's first; limit counts distinct hits
    ranked = _places(eng, limit=4)
    assert ranked[:3] == _places(eng, limit=3) and ranked[3][0] == "memory/log.md"
    assert {ranked[0], ranked[3]} == {p for p in plain if p[0] == "memory/log.md"}


def test_a_one_channel_search_keeps_its_own_ranking(make_engine: Any, search_backend: str) -> None:
    eng = _engine(make_engine, search_backend)
    own = _places(eng, limit=3, channel="lexical")
    eng.plugin_settings("memory").region_penalty = 0.0
    assert _places(eng, limit=3, channel="lexical") == own
    assert [p for p, _s in own].count("memory/log.md") == 2
