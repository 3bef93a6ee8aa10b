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


class CountingEmbedder(helpers.CountingEmbedder):
    """The kit's counting embedder around the real static embedder, made here (the repository's
    tests may import the embeddings plugin)."""

    def __init__(self) -> None:
        from goclaw_embeddings.static_model import StaticEmbedder

        super().__init__(StaticEmbedder())
