"""Embedding texts for storage with graceful degradation (DESIGN.md §5): the configured provider's
L2-normalised float32 vectors, or ``None`` when there is no provider or it fails, so a caller
stores its row without a vector and search degrades to full text. Used by episodic memory and
the knowledge graph (issue 13 item 4: a kernel mechanism, not a plugin's)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from goclaw.errors import GoclawError

if TYPE_CHECKING:
    from goclaw.engine import Engine

log = logging.getLogger(__name__)

__all__ = ["Embedded", "embed_texts"]


@dataclass
class Embedded:
    vectors: Any  # float32 (n, dim), L2-normalised
    provider: str
    model: str
    dim: int


def embed_texts(engine: Engine, texts: Sequence[str]) -> Embedded | None:
    """Embed ``texts`` with the configured provider; ``None`` when there is none or it fails."""
    if not texts:
        return None
    try:
        provider = engine.embedder()
    except GoclawError as exc:
        log.debug("no embedder: %s", exc)
        return None
    if provider is None:
        return None
    try:
        import numpy as np

        vectors = np.asarray(provider.embed(list(texts)), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        vectors = vectors / norms
    except Exception as exc:  # a provider failing mid-way must not lose the row
        log.warning("embedding failed, storing without vectors: %s", exc)
        return None
    return Embedded(vectors, str(provider.provider), str(provider.model), int(vectors.shape[1]))
