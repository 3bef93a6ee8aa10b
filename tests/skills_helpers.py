"""Helpers shared by the ``test_skills_*`` modules (no tests here)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from goclaw import hookimpl
from goclaw.errors import GoclawError


def write_skill(
    root: Path,
    slug: str,
    description: str = "",
    *,
    name: str | None = None,
    body: str = "Do the thing.\n",
    raw: str | None = None,
) -> Path:
    """Write ``root/slug/SKILL.md`` (YAML frontmatter unless ``raw`` is given)."""
    folder = root / slug
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "SKILL.md"
    if raw is None:
        fm = {"name": name if name is not None else slug, "description": description}
        raw = "---\n" + "".join(f"{k}: {json.dumps(v)}\n" for k, v in fm.items()) + "---\n" + body
    path.write_text(raw, encoding="utf-8")
    return path


def no_builtin(**plugins: Any) -> dict[str, Any]:
    """Engine ``plugins=`` settings without the builtin tier (tests control every skill)."""
    disable = ["goclaw.skills.tier.builtin", *plugins.pop("disable", [])]
    return {"disable": disable, **plugins}


# --------------------------------------------------------------------------- a test embedder

# Words grouped into concepts: texts sharing a concept are similar even with no shared word,
# so a test can prove the vector channel finds what BM25 cannot.
CONCEPTS = [
    {"car", "automobile", "vehicle", "driving", "engine"},
    {"pizza", "pasta", "cooking", "recipe", "kitchen"},
    {"invoice", "billing", "payment", "refund", "money"},
    {"poem", "poetry", "verse", "rhyme"},
    {"deploy", "release", "kubernetes", "server"},
]
DIM = len(CONCEPTS) + 1


def concept_vector(text: str) -> list[float]:
    vec = [0.0] * DIM
    for tok in re.findall(r"[a-z0-9]+", text.lower()):
        for i, group in enumerate(CONCEPTS):
            if tok in group:
                vec[i] += 1.0
    vec[-1] = 0.05  # never all-zero
    norm = math.sqrt(sum(v * v for v in vec))
    return [v / norm for v in vec]


class ConceptEmbedder:
    provider = "test"
    model = "concept-v1"
    dim = DIM

    def __init__(self, log: list[int], fail: bool = False) -> None:
        self.log = log
        self.fail = fail

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        if self.fail:
            raise GoclawError("test embedder is down")
        self.log.append(len(texts))
        return np.asarray([concept_vector(t) for t in texts], dtype=np.float32)


class EmbedderPlugin:
    """Registers embedding providers ``test`` (works), ``test-down`` (embed raises) and
    ``test-broken`` (the factory raises) through the real hook."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    @hookimpl
    def goclaw_embedding_providers(self) -> dict[str, Any]:
        def broken(engine: Any) -> Any:
            raise GoclawError("test provider cannot start")

        return {
            "test": lambda engine: ConceptEmbedder(self.calls),
            "test-down": lambda engine: ConceptEmbedder(self.calls, fail=True),
            "test-broken": broken,
        }
