"""An embedder's own fusion weights (the ``onnx`` profile): used by a hybrid search unless
``[plugins.memory]`` sets ``text_weight`` or ``vector_weight``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from goclaw import hookimpl
from tests.memory_helpers import CountingEmbedder, write


@pytest.fixture
def backend() -> str:
    """The weights are chosen by the memory service, the same for every backend."""
    return "sqlite"


class WeightedEmbedder(CountingEmbedder):
    provider = "test-weights"
    fusion_weights = (0.5, 0.5)


def _asked(make_engine: Any, provider: str, **memory: Any) -> list[tuple[float, float]]:
    """The (text, vector) weights the backend is asked to fuse with, one search per channel."""
    embedder = WeightedEmbedder()

    class Plugin:
        @hookimpl
        def goclaw_embedding_providers(self) -> dict[str, Any]:
            return {"weights": lambda engine: embedder}

    eng = make_engine(
        extra_plugins=[("weightemb", Plugin())],
        plugins={"memory": memory, "embeddings": {"provider": provider}},
    )
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    write(root, "memory/a.md", "# Garden\n\nThe tomato plants need water every morning.\n")
    eng.memory.index("ada")
    backend = eng.memory.backend
    seen: list[tuple[float, float]] = []
    search = backend.search

    def spy(query: Any) -> Any:
        seen.append((query.fusion.text_weight, query.fusion.vector_weight))
        return search(query)

    backend.search = spy
    assert eng.memory.search("tomato watering", "ada")
    return seen


def test_the_embedders_own_weights_apply_when_the_user_set_none(make_engine: Any) -> None:
    assert _asked(make_engine, "weights") == [(0.5, 0.5)]


@pytest.mark.parametrize(
    ("memory", "want"),
    [({"text_weight": 0.8}, (0.8, 0.3)), ({"vector_weight": 0.2}, (0.7, 0.2))],
)
def test_the_users_weights_win_over_the_embedders(
    make_engine: Any, memory: dict[str, float], want: tuple[float, float]
) -> None:
    assert _asked(make_engine, "weights", **memory) == [want]


def test_an_embedder_without_weights_keeps_the_defaults(make_engine: Any) -> None:
    assert _asked(make_engine, "static") == [(0.7, 0.3)]
