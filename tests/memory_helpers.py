"""Helpers for the memory tests: the shipped test kit's (:mod:`goclaw_memory.testing.helpers`)
and the repository's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from goclaw_memory.testing import helpers
from goclaw_memory.testing.helpers import (  # noqa: F401 - re-exported
    EmbedderPlugin,
    FailingEmbedder,
    HashEmbedder,
    chunk_rows,
    write,
)


def saved_index(eng: Any, name: str = "ada") -> tuple[Any, str, Path]:
    """Agent ``name`` created with one note, indexed, searched (its index loaded) and the index
    saved by the SQLite backend: ``(backend, agent id, the saved index's folder)``."""
    root = Path(eng.agent_dir(eng.agents.create(name)))
    write(root, "MEMORY.md", f"The harbour ferry of {name} leaves at noon on Sundays.\n")
    eng.memory.index(name)
    assert eng.memory.search("harbour ferry", name)
    backend = eng.memory.backend
    aid = eng.agents.get(name).id
    path = backend._snapshot(aid)
    assert path is not None and backend.save(aid) == path
    return backend, aid, path


def open_with_backend(url: str | None, workspace: Path, backend: str) -> Any:
    """An engine on ``url`` with no embedder and the memory search backend ``backend``."""
    from goclaw.engine import Engine

    plugins = {"embeddings": {"provider": "none"}, "memory": {"backend": backend}}
    return Engine.open(workspace, url, plugins=plugins)


def index_kettle_and_ferry(eng: Any, name: str = "ada") -> Path:
    """Agent ``name`` (created unless it exists) with two notes, a.md (the kettle) and b.md (the
    ferry), indexed; returns the agent's folder."""
    known = any(a.name == name for a in eng.agents.list())
    agent = eng.agents.get(name) if known else eng.agents.create(name)
    root = Path(eng.agent_dir(agent))
    write(root, "memory/a.md", "The kettle whistles; the kettle is old.\n")
    write(root, "memory/b.md", "The ferry leaves at noon.\n")
    eng.memory.index(name)
    return root


def pg_postings(eng: Any) -> set[tuple[str, int]]:
    """The ``postgresql`` backend's postings as (term, chunk id), read through the dictionary."""
    from sqlalchemy import text

    with eng.db.engine.connect() as c:
        rows = c.execute(
            text("SELECT d.term, p.chunk_id FROM memory_postings p JOIN memory_terms d ON d.id = p.term_id")
        )
        return {(r[0], int(r[1])) for r in rows}


class CountingEmbedder(helpers.CountingEmbedder):
    """The kit's counting embedder around the real static embedder, made here (the repository's
    tests may import the embeddings plugin)."""

    def __init__(self) -> None:
        from goclaw_embeddings.static_model import StaticEmbedder

        super().__init__(StaticEmbedder())
