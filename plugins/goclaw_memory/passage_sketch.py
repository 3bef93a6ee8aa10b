"""The reranker's passage step from sketches kept in the memory index (docs/memory.md "After
fusion: reranker, passages, decay and MMR").

When the configured embedder can sketch passages
(:class:`goclaw.contracts.providers.PassageSketchingEmbedder`, the bundled static model does)
and the passage step is on, the SQLite and inprocess backends sketch each embedded chunk as
they add it to the index (:func:`with_sketches`), whether its vector was computed or came from
the embedding cache, and keep the sketch with the index (saved and loaded with it). A search's
passage step then scores its best hits from their sketches (:func:`sketched_scorer`): one
small gather and two sums instead of splitting, tokenising and embedding their passages. Text
without a sketch (another tier, a backend without sketches, an index built with the step off)
goes through ``passage_similarity`` as before; the figures are the same.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from goclaw.contracts.providers import PassageSketchingEmbedder
from goclaw.errors import GoclawError

if TYPE_CHECKING:
    from goclaw.contracts.host import Host
    from goclaw.contracts.search import Space
    from goclaw_search.index import Doc

log = logging.getLogger(__name__)


def sketcher(engine: Host, space: Space | None) -> Callable[[Sequence[str]], list[Any]] | None:
    """The embedder's ``passage_sketches`` when chunks of ``space`` should be sketched: the
    passage step is on (overlap reranker, weighted fusion) and the configured embedder is of
    that space and sketches; else None. An embedder's ``passage_sketcher()``, when it has one,
    gives the callable instead (one for the caller's run of calls: a background job's steps)."""
    embedder = sketching(engine, space)
    if embedder is None:
        return None
    session = getattr(embedder, "passage_sketcher", None)  # optional: one per run of calls
    return session() if callable(session) else embedder.passage_sketches


def sketching(engine: Host, space: Space | None) -> PassageSketchingEmbedder | None:
    """The configured embedder when chunks of ``space`` are sketched (see :func:`sketcher`),
    else None: what a search asks to know whether its passage step reads sketches."""
    if space is None:
        return None
    settings = engine.plugin_settings("memory")
    if settings.rerank != "overlap" or settings.rerank_passages <= 0 or settings.fusion != "weighted":
        return None
    try:
        embedder = engine.embedder()
    except GoclawError:
        return None
    if not isinstance(embedder, PassageSketchingEmbedder):
        return None
    if (embedder.provider, embedder.model, int(embedder.dim)) != tuple(space):
        return None
    return embedder


def with_sketches(engine: Host, docs: list[Doc], texts: Sequence[str], space: Space | None) -> list[Doc]:
    """``docs`` (of the chunks ``texts``) with the passage sketches of those that have a vector
    (only they can be hits of both channels, the passage step's), when :func:`sketcher` gives
    one. A failing sketcher costs the step's speed, never the indexing."""
    make = sketcher(engine, space)
    if make is None:
        return docs
    at = [i for i, d in enumerate(docs) if d.vector is not None]
    if not at:
        return docs
    try:
        made = make([texts[i] for i in at])
    except Exception:
        log.warning("passage sketches failed; the passage step reads these chunks' text", exc_info=True)
        return docs
    out = list(docs)
    for i, sketch in zip(at, made, strict=True):
        out[i] = out[i]._replace(sketch=sketch)
    return out


def sketched_scorer(
    backend: Any,
    agent_id: str,
    hits: Sequence[Any],
    embedder: PassageSketchingEmbedder,
    query_vector: Any = None,
) -> SketchedScorer:
    """The passage scorer of :func:`goclaw_memory.postprocess.overlap_rerank` for ``hits``:
    those that are document chunks with a sketch in the agent's loaded index are scored from it
    (against ``query_vector``, the query's embedding, when given and the embedder takes one;
    else the query's text), the rest by ``embedder.passage_similarity``. ``backend`` is the
    memory service's search backend (it keeps the sketches)."""
    return SketchedScorer(backend, agent_id, hits, embedder, query_vector)


class SketchedScorer:
    """``score_hits(query, hits)``: each hit's best passage cosine; called as ``(query, texts)``
    (the texts being snippets of the hits it was made for) it finds their hits by identity."""

    def __init__(
        self,
        backend: Any,
        agent_id: str,
        hits: Sequence[Any],
        embedder: PassageSketchingEmbedder,
        query_vector: Any = None,
    ) -> None:
        self.backend, self.agent_id, self.hits, self.embedder = backend, agent_id, hits, embedder
        self.space = (embedder.provider, embedder.model, int(embedder.dim))
        takes_vector = getattr(embedder, "token_similarity_takes_vectors", False) is True
        self.vector = query_vector if takes_vector else None
        self.query_vector = query_vector

    def __call__(self, query: str, texts: list[str]) -> Any:
        where = {id(t): i for i, t in enumerate(texts)}
        ids = [-1] * len(texts)
        for h in self.hits:
            i = where.get(id(h.snippet))
            if i is not None and texts[i] is h.snippet and h.tier == "document" and h.chunk_id is not None:
                ids[i] = h.chunk_id
        return self._score(query, ids, texts.__getitem__)

    def score_hits(self, query: str, hits: Sequence[Any]) -> Any:
        ids = [h.chunk_id if h.tier == "document" and h.chunk_id is not None else -1 for h in hits]
        # A hit's text is read only if it has no sketch (the rows' text may not be read yet).
        return self._score(query, ids, lambda i: str(hits[i].snippet))

    def _score(self, query: str, ids: list[int], text_of: Callable[[int], str]) -> Any:
        import numpy as np

        from goclaw_search.passage_sketches import sketch_cosines

        embedder = self.embedder
        backend = self.backend
        if not _keeps_sketches(backend):  # written to the contract before chunk_sketches
            return embedder.passage_similarity(query, list(map(text_of, range(len(ids)))))
        found = self._in_one_call(backend, ids)
        if found is None:
            batch = backend.chunk_sketches(self.agent_id, ids, self.space)
            if batch is None:
                return embedder.passage_similarity(query, list(map(text_of, range(len(ids)))))
            asked = self.vector if self.vector is not None else query
            found = sketch_cosines(batch, embedder.token_similarity(asked, batch.tokens)), batch.has
        best, has = found
        if not has.all():
            rest = np.flatnonzero(~has)
            best[rest] = embedder.passage_similarity(query, [text_of(i) for i in rest.tolist()])
        return best

    def _in_one_call(self, backend: Any, ids: list[int]) -> Any:
        """(best, has) from the backend's ``passage_cosines`` (this plugin's SQLite and
        inprocess backends) with the embedder's ``token_rows`` and the query's vector, when all
        three are there; else None (the sketches are read, then scored)."""
        rows = getattr(self.embedder, "token_rows", None)
        if self.query_vector is None or rows is None or not _offers_cosines(backend):
            return None
        import numpy as np

        matrix = rows()
        vec = np.asarray(self.query_vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(vec))
        if (
            not norm
            or matrix is None
            or matrix.dtype != np.float32
            or not matrix.flags.c_contiguous
            or matrix.ndim != 2
            or matrix.shape[1] != len(vec)
        ):
            return None
        q = np.ascontiguousarray(
            vec / np.float32(norm)
        )  # the query's unit embedding, as the embedder scales it
        return backend.passage_cosines(self.agent_id, ids, self.space, matrix, q)


_CONTRACT: dict[tuple[type, type], bool] = {}


def _conforms(backend: Any, protocol: type) -> bool:
    """``isinstance(backend, protocol)``, remembered per class (a protocol check costs ~20 us)."""
    key = (type(backend), protocol)
    found = _CONTRACT.get(key)
    if found is None:
        found = isinstance(backend, protocol)
        if len(_CONTRACT) < 64:
            _CONTRACT[key] = found
    return found


def _keeps_sketches(backend: Any) -> bool:
    """Whether the backend has the whole search contract, ``chunk_sketches`` included."""
    from goclaw.contracts.search import SearchBackend

    return _conforms(backend, SearchBackend)


def _offers_cosines(backend: Any) -> bool:
    """Whether the backend scores sketches in one call (``PassageCosineBackend``)."""
    from goclaw.contracts.search import PassageCosineBackend

    return _conforms(backend, PassageCosineBackend)
