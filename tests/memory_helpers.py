"""Helpers for the memory tests: files on disk and test embedding providers."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from goclaw import hookimpl


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


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


class CountingEmbedder:
    """The real static embedder under another provider name, counting the texts it embeds."""

    provider = "test-counting"

    def __init__(self) -> None:
        from goclaw_embeddings.static_model import StaticEmbedder

        self.inner = StaticEmbedder()
        self.model = "static-" + self.inner.model
        self.dim = self.inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts.extend(texts)
        return self.inner.embed(texts)


class HashEmbedder:
    """A tiny deterministic bag-of-words embedder (another model, another dimension)."""

    provider = "test-hash"

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.model = f"hash-{dim}"
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> Any:
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in re.findall(r"\w+", t.lower()):
                h = int(hashlib.md5(tok.encode()).hexdigest(), 16)
                out[i, h % self.dim] += 1.0 if (h >> 8) & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1
        return out / norms


class FailingEmbedder:
    provider = "test-failing"
    model = "broken"
    dim = 8

    def embed(self, texts: Sequence[str]) -> Any:
        raise RuntimeError("embedding service down")


class EmbedderPlugin:
    """Registers the test providers; instances are shared so tests can inspect them."""

    def __init__(self) -> None:
        self.counting = CountingEmbedder()
        self.hash = HashEmbedder()
        self.failing = FailingEmbedder()

    @hookimpl
    def goclaw_embedding_providers(self) -> dict[str, Any]:
        return {
            "counting": lambda engine: self.counting,
            "hash": lambda engine: self.hash,
            "failing": lambda engine: self.failing,
        }


def chunk_rows(engine: Any, agent_id: str) -> list[tuple[Any, ...]]:
    from sqlalchemy import text

    with engine.db.engine.connect() as conn:
        return list(
            conn.execute(
                text(
                    "SELECT id, user_id, path, start_line, end_line, text, embedding_provider, "
                    "embedding_model, embedding_dim FROM memory_chunks WHERE agent_id = :a ORDER BY id"
                ),
                {"a": agent_id},
            ).all()
        )
