"""Helpers for tests of goclaw plugins: files on disk, the memory plugin's chunk rows, the real
command line in-process, and test embedding providers."""

from __future__ import annotations

import hashlib
import io
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from goclaw import hookimpl


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def run_cli(
    args: list[str],
    *,
    workspace: Path | None = None,
    database_url: str | None = None,
    stdin: str | bytes | None = None,
) -> CliResult:
    """Run the real CLI entry point (``goclaw.cli.main``) in-process and capture its output."""
    from goclaw.cli import main

    full: list[str] = []
    if workspace is not None:
        full += ["--workspace", str(workspace)]
    if database_url is not None:
        full += ["--database-url", database_url]
    full += args
    out, err = io.StringIO(), io.StringIO()
    data = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
    fake_in = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    old = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = fake_in, out, err
    code = 0
    try:
        main(full)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdin, sys.stdout, sys.stderr = old
    return CliResult(code, out.getvalue(), err.getvalue())


class CountingEmbedder:
    """Another embedder (by default the engine's ``static`` one, found when the provider is
    first made) under another provider name, counting the texts it embeds."""

    provider = "test-counting"

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner
        self.texts: list[str] = []

    @property
    def model(self) -> str:
        return "static-" + self.inner.model

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

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
    """Registers the test providers ``counting``, ``hash`` and ``failing``; instances are
    shared so tests can inspect them."""

    def __init__(self) -> None:
        self.counting = CountingEmbedder()
        self.hash = HashEmbedder()
        self.failing = FailingEmbedder()

    def _counting(self, engine: Any) -> CountingEmbedder:
        if self.counting.inner is None:
            static = engine.hooks.registry("goclaw_embedding_providers", "embedding provider")["static"]
            self.counting.inner = static(engine)
        return self.counting

    @hookimpl
    def goclaw_embedding_providers(self) -> dict[str, Any]:
        return {
            "counting": self._counting,
            "hash": lambda engine: self.hash,
            "failing": lambda engine: self.failing,
        }


def chunk_rows(engine: Any, agent_id: str) -> list[tuple[Any, ...]]:
    """The memory plugin's chunk rows of an agent, by id: ``(id, user_id, path, start_line,
    end_line, text, embedding_provider, embedding_model, embedding_dim)``."""
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
