"""The overlap reranker's first step: each hybrid search's fusion weights from its candidates'
cosines (``adaptive_weight`` / ``adaptive_gap``, on by default), on hand-made candidates."""

from __future__ import annotations

from typing import Any

import pytest

from goclaw_memory.hybrid import MemoryHit
from goclaw_memory.postprocess import builtin_rerank, overlap_rerank
from goclaw_memory.settings import MemorySettings
from goclaw_search.fusion import GAP_OF

TEXT = "The Kestrel gateway certificate expired."  # every query term, side by side: coverage 1


def _hits() -> list[MemoryHit]:
    """``words``: the best full-text match, a cosine like the crowd's; ``meaning``: a little
    less in full text, the one cosine that stands out (gap 0.45 − 0.30 = 0.15)."""

    def hit(path: str, lexical: float, cosine: float) -> MemoryHit:
        score = 0.7 * lexical + 0.3 * cosine  # the default weighted fusion
        return MemoryHit(path, 1, 1, score, "agent", TEXT, channels={"lexical": lexical, "vector": cosine})

    crowd = [hit(f"memory/n{i}.md", 0.2, 0.30) for i in range(GAP_OF)]
    return [hit("memory/words.md", 1.0, 0.30), hit("memory/meaning.md", 0.85, 0.45), *crowd]


def _first(hits: list[Any]) -> str:
    return str(hits[0].path)


def test_a_standout_cosine_moves_its_hit_up() -> None:
    assert _first(overlap_rerank("Kestrel gateway certificate", _hits(), 0.375)) == "memory/words.md"
    ranked = overlap_rerank("Kestrel gateway certificate", _hits(), 0.375, adaptive=(3.0, 0.06))
    assert _first(ranked) == "memory/meaning.md"
    vw = 0.3 + 3.0 * (0.15 - 0.06)
    assert ranked[0].score == pytest.approx((1 - vw) * 0.85 + vw * 0.45)


class _Embedder:
    provider, model, dim = "test", "test", 4


class _OwnWeights(_Embedder):
    fusion_weights = (0.7, 0.3)


def _builtin(settings: MemorySettings, embedder: Any) -> str:
    query = "Kestrel gateway certificate"
    hits = builtin_rerank(settings, query, "ada", _hits(), None, lambda: embedder, None)
    assert hits is not None
    return _first(hits)


def test_the_default_settings_weigh_each_search_by_its_cosines() -> None:
    settings = MemorySettings(rerank_passages=0)
    assert (settings.adaptive_weight, settings.adaptive_gap) == (3.0, 0.06)
    assert _builtin(settings, _Embedder()) == "memory/meaning.md"
    assert _builtin(MemorySettings(rerank_passages=0, adaptive_weight=0), _Embedder()) == "memory/words.md"


def test_an_embedder_with_its_own_weights_keeps_them() -> None:
    assert _builtin(MemorySettings(rerank_passages=0), _OwnWeights()) == "memory/words.md"


def test_a_small_memory_keeps_the_weights_as_set() -> None:
    """Fewer candidates than it takes to tell a standout cosine from the crowd's."""
    few = _hits()[: GAP_OF - 1]
    ranked = overlap_rerank("Kestrel gateway certificate", few, 0.375, adaptive=(3.0, 0.06))
    assert _first(ranked) == "memory/words.md"


@pytest.mark.parametrize("memory", [{"fusion": "minmax"}, {"rerank": "none"}])
def test_only_the_weighted_fusion_with_the_overlap_reranker(memory: dict[str, Any]) -> None:
    hits = builtin_rerank(
        MemorySettings(rerank_passages=0, **memory), "Kestrel gateway", "ada", _hits(), None, _Embedder, None
    )
    assert hits is None or _first(hits) == "memory/words.md"
