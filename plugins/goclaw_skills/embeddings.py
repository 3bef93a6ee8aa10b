"""Skill vectors through the ``embedding_cache`` table, and their start-up backfill.

Vectors are keyed by (sha256 of the embedded text, provider, model), so unchanged skills
are never embedded twice, across processes and restarts. Start-up backfill embeds only the
skills that lack a cached vector; when all are cached it costs one query.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from goclaw_skills.loader import text_hash

if TYPE_CHECKING:
    from goclaw.contracts.host import Host
    from goclaw.contracts.providers import EmbeddingProvider

log = logging.getLogger(__name__)
_BATCH = 500


def cached_vectors(engine: Host, embedder: EmbeddingProvider, hashes: Sequence[str]) -> dict[str, Any]:
    from sqlmodel import select

    from goclaw.contracts.store import EmbeddingCache

    found: dict[str, Any] = {}
    wanted = sorted(set(hashes))
    with engine.db.session() as s:
        for i in range(0, len(wanted), _BATCH):
            chunk = wanted[i : i + _BATCH]
            rows = s.exec(
                select(EmbeddingCache.chunk_hash, EmbeddingCache.embedding).where(
                    EmbeddingCache.provider == embedder.provider,
                    EmbeddingCache.model == embedder.model,
                    EmbeddingCache.chunk_hash.in_(chunk),  # type: ignore[attr-defined]
                )
            ).all()
            for h, vec in rows:
                if vec is not None:
                    found[h] = vec
    return found


def cached_hashes(engine: Host, embedder: EmbeddingProvider, hashes: Sequence[str]) -> set[str]:
    """Which of ``hashes`` already have a vector (reads no vectors)."""
    from sqlmodel import select

    from goclaw.contracts.store import EmbeddingCache

    found: set[str] = set()
    wanted = sorted(set(hashes))
    with engine.db.session() as s:
        for i in range(0, len(wanted), _BATCH):
            found.update(
                s.exec(
                    select(EmbeddingCache.chunk_hash).where(
                        EmbeddingCache.provider == embedder.provider,
                        EmbeddingCache.model == embedder.model,
                        EmbeddingCache.chunk_hash.in_(wanted[i : i + _BATCH]),  # type: ignore[attr-defined]
                    )
                ).all()
            )
    return found


def store_vectors(engine: Host, embedder: EmbeddingProvider, items: dict[str, Any]) -> None:
    """Write new cache rows (rows another process wrote meanwhile are kept)."""
    if not items:
        return
    from goclaw.contracts.store import EmbeddingCache

    def _do(s: Any) -> None:
        for h, vec in items.items():
            if s.get(EmbeddingCache, (h, embedder.provider, embedder.model)) is None:
                s.add(
                    EmbeddingCache(
                        chunk_hash=h,
                        provider=embedder.provider,
                        model=embedder.model,
                        dim=len(vec),
                        embedding=vec,
                    )
                )

    engine.db.run_write(_do)


def skill_vectors(engine: Host, embedder: EmbeddingProvider, texts: Sequence[str]) -> Any:
    """A float32 matrix (len(texts), dim): cached vectors, missing ones embedded and stored."""
    import numpy as np

    hashes = [text_hash(t) for t in texts]
    found = cached_vectors(engine, embedder, hashes)
    missing = [(h, t) for h, t in dict(zip(hashes, texts, strict=True)).items() if h not in found]
    if missing:
        vecs = np.asarray(embedder.embed([t for _h, t in missing]), dtype=np.float32)
        new = {h: vecs[i] for i, (h, _t) in enumerate(missing)}
        store_vectors(engine, embedder, new)
        found.update(new)
    if not texts:
        return np.zeros((0, int(getattr(embedder, "dim", 0) or 0)), dtype=np.float32)
    return np.vstack([np.asarray(found[h], dtype=np.float32).reshape(1, -1) for h in hashes])


def backfill(engine: Host, embedder: EmbeddingProvider, texts: Sequence[str]) -> int:
    """Embed and cache the skills that lack a vector; returns how many were embedded.

    When every vector is cached this is one query (no model load, no numpy import).
    """
    by_hash = {text_hash(t): t for t in texts}
    found = cached_hashes(engine, embedder, list(by_hash))
    missing = [(h, t) for h, t in by_hash.items() if h not in found]
    if not missing:
        return 0
    import numpy as np

    for i in range(0, len(missing), _BATCH):
        chunk = missing[i : i + _BATCH]
        vecs = np.asarray(embedder.embed([t for _h, t in chunk]), dtype=np.float32)
        store_vectors(engine, embedder, {h: vecs[j] for j, (h, _t) in enumerate(chunk)})
    return len(missing)
