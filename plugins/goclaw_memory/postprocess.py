"""After fusion, before the cut to ``limit``: temporal decay, the reranker
hook and MMR diversification, over the de-duplicated candidates of one search.

Order: decay (scores × age factor, re-sorted) -> the reranker (this plugin's own, or the
``goclaw_memory_rerank`` hook when another plugin implements it) on the best
``rerank_candidates`` -> a file's further regions scored down (``region_penalty``) -> MMR
picks ``limit`` -> the first ``limit``. Each step is off unless its
setting is on (defaults chosen by the measurements in docs/memory.md). The functions themselves
live in :mod:`goclaw_search.rerank`.
"""

from __future__ import annotations

import logging
import os
import time
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goclaw_memory.hybrid import fusion_weights
from goclaw_memory.paths import scope_prefix
from goclaw_search.fusion import query_weights, reweighted
from goclaw_search.passages import passage_scores
from goclaw_search.rerank import (
    age_days,
    decay_factor,
    is_evergreen,
    jaccard,
    mmr_order,
    overlap_scores,
    region_scores,
    term_positions,
    word_set,
)
from goclaw_search.tokenize import query_terms, terms

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from goclaw_memory.hybrid import MemoryHit
    from goclaw_memory.settings import MemorySettings

log = logging.getLogger(__name__)


def apply_decay(
    hits: list[MemoryHit], agent_dir: Path, cfg: MemorySettings, now: float | None = None
) -> list[MemoryHit]:
    """Scores × ``0.5 ** (age / half-life)``, re-sorted; evergreen files untouched."""
    now = time.time() if now is None else now
    for hit in hits:
        local = hit.path[len(scope_prefix(hit.user_id)) :]
        if is_evergreen(local, cfg.decay_evergreen):
            continue
        age = age_days(hit.path, now, lambda h=hit: _mtime(agent_dir / h.path))
        if age is not None:
            hit.score *= decay_factor(age, cfg.decay_half_life_days)
    hits.sort(key=lambda h: (-h.score, h.path, h.start_line))
    return hits


def _mtime(path: Path) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:  # deleted since it was indexed
        return None


_TERMS: dict[str, dict[str, list[int]]] = {}  # snippet -> term positions: found again, no tokenising
_TERMS_MAX = 4096


def _snippet_terms(text: str) -> dict[str, list[int]]:
    found = _TERMS.get(text)
    if found is None:
        if len(_TERMS) >= _TERMS_MAX:
            _TERMS.clear()
        found = _TERMS[text] = term_positions(terms(text))
    return found


_WORDSETS: dict[str, frozenset[str]] = {}


def _snippet_words(text: str) -> frozenset[str]:
    found = _WORDSETS.get(text)
    if found is None:
        if len(_WORDSETS) >= _TERMS_MAX:
            _WORDSETS.clear()
        found = _WORDSETS[text] = word_set(text)
    return found


def overlap_rerank(
    query: str,
    hits: list[Any],
    weight: float = 0.3,
    *,
    passages: Callable[[str, list[str]], Sequence[float]] | None = None,
    top: int = 0,
    text_weight: float = 0.7,
    vector_weight: float = 0.3,
    adaptive: tuple[float, float] = (0.0, 0.0),
) -> list[Any]:
    """The built-in no-network reranker: first, with ``adaptive`` = (slope, gap) and a slope
    above 0, the hits' weighted fusion is redone with this query's own weights
    (:func:`goclaw_search.fusion.query_weights` of the hybrid hits' cosines, from
    ``text_weight`` / ``vector_weight``); then scores × query-term coverage and proximity
    (:func:`goclaw_search.rerank.overlap_scores`), best first; the candidate chunks of one
    memory file share their coverage (the query terms any of them holds), so a long note cut
    into chunks that split the query's words is not scored down for the cut. Then, given
    ``passages`` (``(query, texts) -> best passage cosine of each text``, e.g. the static embedder's
    ``passage_similarity``), the best ``top`` hits of both channels get the vector share of
    their weighted fusion re-measured on their best passage
    (:func:`goclaw_search.passages.passage_scores`), and all are sorted again."""
    wanted = _query_terms(query)
    docs = [t if (t := getattr(h, "terms", None)) is not None else _snippet_terms(h.snippet) for h in hits]
    # a user's file has its scope in its path (users/U/...): the path alone names the file
    files = [h.path if getattr(h, "tier", "") == "document" else i for i, h in enumerate(hits)]
    scores = [h.score for h in hits]
    if adaptive[0] > 0:
        channels = [h.channels for h in hits]
        lexical = [c.get("lexical") for c in channels]
        vector = [c.get("vector") for c in channels]
        cosines = [v for v in vector if v is not None]  # a hybrid candidate has both channels
        weights = query_weights(cosines, text_weight, vector_weight, *adaptive)
        if weights != (text_weight, vector_weight):
            scores = reweighted(scores, lexical, vector, (text_weight, vector_weight), weights)
            text_weight, vector_weight = weights
    new = overlap_scores(wanted, docs, scores, weight, files)
    for hit, score in zip(hits, new, strict=True):
        hit.score = score
    ranked = sorted(hits, key=_rank)
    if passages is None or top <= 0:
        return ranked
    best = [h for h in ranked[:top] if "lexical" in h.channels and "vector" in h.channels]
    if not best:
        return ranked
    # A scorer that reads the hits themselves (goclaw_memory.passage_sketch: their chunk ids)
    # is handed them; any other gets their text.
    score_hits = getattr(passages, "score_hits", None)
    try:
        if score_hits is not None:
            sims = score_hits(query, best)
        else:
            sims = passages(query, [h.snippet for h in best])
    except Exception:  # the step refines an order that is already good: never lose the search
        log.warning("the reranker's passage step failed; hits keep the overlap order", exc_info=True)
        return ranked
    rescored = passage_scores(
        [h.score for h in best], [h.channels for h in best], sims, text_weight, vector_weight
    )
    for hit, score in zip(best, rescored, strict=True):
        hit.score = score
    return sorted(ranked, key=_rank)


def _rank(h: Any) -> tuple[float, str, int]:
    return (-h.score, h.path, h.start_line)


_QUERIES: dict[str, list[str]] = {}  # query -> its terms: a search's were just computed by the service


def _query_terms(query: str) -> list[str]:
    found = _QUERIES.get(query)
    if found is None:
        if len(_QUERIES) >= 256:
            _QUERIES.clear()
        found = _QUERIES[query] = query_terms(query)
    return found


def apply_rerank(
    rerank: Callable[[list[MemoryHit]], list[MemoryHit] | None], hits: list[MemoryHit], n: int
) -> list[MemoryHit]:
    """Hand the best ``n`` hits to ``rerank`` (:meth:`goclaw_memory.service.MemoryService.reranker`:
    this plugin's own reranker, or the ``goclaw_memory_rerank`` hook when another plugin
    implements it); keep its order (hits it leaves out are dropped); anything it returns that
    was not among them is ignored; ``None`` keeps the order."""
    top, rest = hits[:n], hits[n:]
    if not top:
        return hits
    result = rerank(list(top))
    if result is None:
        return hits
    allowed = set(map(id, top))
    ordered = [h for h in result if id(h) in allowed]
    if len(set(map(id, ordered))) != len(ordered):  # a hit returned twice: keep its first place
        seen: set[int] = set()
        ordered = [h for h in ordered if not (id(h) in seen or seen.add(id(h)))]  # type: ignore[func-returns-value]
    if len(ordered) != len(result):
        log.warning("goclaw_memory_rerank returned hits that were not among its candidates; ignored")
    return ordered + rest


def builtin_rerank(
    cfg: MemorySettings,
    query: str,
    agent_id: str,
    hits: list[Any],
    query_vector: Any,
    embedder: Callable[[], Any],
    backend: Any,
) -> list[Any] | None:
    """This plugin's own reranker: the term-overlap/proximity one (:func:`overlap_rerank`) when
    ``rerank = "overlap"``, else ``None`` (keep the order). With the passage step on (weighted
    fusion), ``embedder()`` (asked only then) scores the best hits' passages: from the sketches
    ``backend`` keeps when the embedder sketches, else by its ``passage_similarity``."""
    if cfg.rerank != "overlap":
        return None
    passages = None
    weights = (cfg.text_weight, cfg.vector_weight)
    adaptive = (0.0, 0.0)
    weighted = cfg.fusion == "weighted"
    if weighted and (cfg.rerank_passages or cfg.adaptive_weight):
        provider = embedder()
        weights = fusion_weights(cfg, provider)  # the ones the search fused with
        # Per-query weights only around the weights measured with them: an embedder that
        # brings its own (the onnx model's 0.5 / 0.5) keeps those as they are.
        if getattr(provider, "fusion_weights", None) is None:
            adaptive = (cfg.adaptive_weight, cfg.adaptive_gap)
    if cfg.rerank_passages and weighted:
        # An embedder that scores passages locally and cheaply offers passage_similarity
        # (goclaw.contracts.providers.PassageScoringEmbedder; the bundled static model does); a
        # hosted one is never called per passage.
        kind = _passage_kind(provider)
        if kind == "sketching":
            # ... and one that sketches them has its chunks' sketches in the memory index: a
            # search reads its hits' passages from there (goclaw_memory.passage_sketch).
            from goclaw_memory.passage_sketch import sketched_scorer

            passages = sketched_scorer(backend, agent_id, hits, provider, query_vector)
        elif kind == "scoring":
            passages = provider.passage_similarity
    return overlap_rerank(
        query,
        hits,
        cfg.rerank_weight,
        passages=passages,
        top=cfg.rerank_passages,
        text_weight=weights[0],
        vector_weight=weights[1],
        adaptive=adaptive,
    )


_KINDS: dict[type, str] = {}


def _passage_kind(embedder: Any) -> str:
    """``"sketching"``, ``"scoring"`` or ``""``: which passage contract (if any) the embedder's
    class offers (goclaw.contracts.providers); remembered per class, as a protocol
    ``isinstance`` costs ~15 us per search."""
    if embedder is None:
        return ""
    kind = _KINDS.get(type(embedder))
    if kind is None:
        from goclaw.contracts.providers import PassageScoringEmbedder, PassageSketchingEmbedder

        kind = (
            "sketching"
            if isinstance(embedder, PassageSketchingEmbedder)
            else "scoring"
            if isinstance(embedder, PassageScoringEmbedder)
            else ""
        )
        if len(_KINDS) < 64:
            _KINDS[type(embedder)] = kind
    return kind


def apply_mmr(hits: list[MemoryHit], lam: float, limit: int) -> list[MemoryHit]:
    """The first ``limit`` hits in MMR order (word-set Jaccard similarity of the snippets).
    Relevance is each hit's score when the list is sorted by score, else its rank (a reranker
    may order without rescoring)."""
    if len(hits) <= 1:
        return hits[:limit]
    scores = [h.score for h in hits]
    if any(a < b for a, b in pairwise(scores)):
        scores = [float(len(hits) - i) for i in range(len(hits))]
    sets = [_snippet_words(h.snippet) for h in hits]
    order = mmr_order(scores, lambda i, j: jaccard(sets[i], sets[j]), lam, k=limit)
    return [hits[i] for i in order]


def apply_regions(hits: list[MemoryHit], penalty: float) -> list[MemoryHit]:
    """The hits re-sorted after :func:`goclaw_search.rerank.region_scores`: a file's regions
    after its best one scored × ``penalty`` per region (a user's copy of a file is a file of its
    own; extra-tier hits keep their scores)."""
    files = [(h.user_id, h.path) if h.tier == "document" else i for i, h in enumerate(hits)]
    spans = [(h.start_line, h.end_line) for h in hits]
    new = region_scores(files, spans, [h.score for h in hits], penalty)
    for hit, score in zip(hits, new, strict=True):
        hit.score = score
    return sorted(hits, key=_rank)


def postprocess(
    cfg: MemorySettings,
    agent_dir: Path | None,
    hits: list[MemoryHit],
    limit: int,
    rerank: Callable[[list[MemoryHit]], list[MemoryHit] | None],
    regions: bool = True,
) -> list[MemoryHit]:
    """Decay, rerank, the region penalty (with ``regions``: hybrid searches) and MMR as
    configured: the hits in their final order, ``limit`` of them after MMR, else all (the
    caller cuts them: :func:`goclaw_memory.hybrid.with_texts`). ``agent_dir`` is read by the
    decay only; ``rerank`` reorders the best candidates (:func:`apply_rerank`)."""
    if cfg.decay:
        if agent_dir is None:
            raise ValueError("temporal decay needs the agent's folder")
        hits = apply_decay(hits, agent_dir, cfg)
    hits = apply_rerank(rerank, hits, cfg.rerank_candidates)
    if regions and cfg.region_penalty != 1.0:
        hits = apply_regions(hits, cfg.region_penalty)
    if cfg.mmr:
        hits = apply_mmr(hits, cfg.mmr_lambda, limit)
    return hits
