"""Post-processing of fused candidates: temporal decay,
maximal-marginal-relevance diversification and a term-overlap/proximity reranker.

All three are plain functions over a small candidate list (the backend's ``limit`` × 3 fused
chunks), so any search that returns scored texts can use them; the memory service applies them
in the order decay -> rerank -> MMR, then cuts to ``limit``. Each is measured in docs/memory.md
("Diversity, recency and reranking"), where the defaults are chosen.

**Temporal decay** (as OpenClaw's memory search): ``score × 0.5 ** (age_days / half_life)``.
A dated note (``memory/2026-03-01.md``, ``memory/2026/03/standup-2026-03-01.md``) takes its
date from its name; an evergreen file (``MEMORY.md`` and any configured pattern) never decays;
any other file ages from its modification time.

**MMR** (Carbonell & Goldstein 1998): pick, one at a time, the candidate maximising
``λ × relevance - (1 - λ) × max similarity to the ones already picked``; relevance is the
fused score min-max normalised over the candidates; similarity is the cosine of the chunks'
vectors when given, else the Jaccard overlap of their word sets (OpenClaw's choice, and cheap:
no vectors need fetching).

**Overlap reranker**: needs no model and no network; blends the fused score with the share of
the query's terms a chunk contains (or its group: the candidate chunks of one file together)
and how close together they sit in the chunk; its passage step (the vector share of the best
few hits measured on their best passage) is in :mod:`goclaw_search.passages`.

**Regions** (:func:`region_scores`, off by default): a file's second and later regions (chunks
neither overlapping nor next to a better one of the file) scored down, for collections where
a file is one document.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Mapping, Sequence, Set
from datetime import date
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

import numpy as np

from goclaw_search.vecq import compiled

if TYPE_CHECKING:
    from collections.abc import Iterator

    from numpy.typing import NDArray

__all__ = [
    "TermMatches",
    "age_days",
    "cosine_matrix",
    "date_from_path",
    "decay_factor",
    "is_evergreen",
    "jaccard",
    "lex_positions",
    "match_batch",
    "mmr_order",
    "overlap_scores",
    "positions_matches",
    "region_scores",
    "term_matches",
    "window_features",
    "word_set",
]

_WORDS = re.compile(r"[^\W_]+")
# A date in the file name of a note under memory/ (any depth): memory/2026-03-01.md,
# memory/2026/03/standup-2026-03-01.md, users/u1/memory/2026-03-01-call.md.
_DATED = re.compile(r"(?:^|/)memory/(?:[^/]+/)*[^/]*?(\d{4})-(\d{2})-(\d{2})[^/]*\.md$", re.IGNORECASE)
SECONDS_PER_DAY = 86_400.0


# --------------------------------------------------------------------------- temporal decay
def date_from_path(path: str) -> date | None:
    """The date in a dated note's file name, or ``None`` (not dated, or not a real date)."""
    m = _DATED.search(path)
    if m is None:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:  # memory/2026-13-45.md is not a date
        return None


def is_evergreen(path: str, patterns: Sequence[str]) -> bool:
    """Whether ``path`` (relative to its scope's folder: ``MEMORY.md``, ``memory/topics/x.md``)
    matches one of the glob ``patterns`` (case-sensitive; ``*`` also crosses ``/``)."""
    return any(fnmatchcase(path, p) for p in patterns)


def age_days(path: str, now: float, mtime: Callable[[], float | None]) -> float | None:
    """Age in days of the memory in ``path`` at ``now`` (a POSIX timestamp): from the date in
    its name, else from ``mtime()`` (``None``: unknown, no decay). Never negative."""
    dated = date_from_path(path)
    if dated is not None:
        born = float(_midnight_utc(dated))
    else:
        stamp = mtime()
        if stamp is None:
            return None
        born = stamp
    return max(0.0, (now - born) / SECONDS_PER_DAY)


def _midnight_utc(d: date) -> int:
    return (d.toordinal() - date(1970, 1, 1).toordinal()) * 86_400


def decay_factor(age: float, half_life_days: float) -> float:
    """``0.5 ** (age / half_life_days)``: 1 at age 0, 0.5 at one half-life; 1 when the
    half-life is not positive (decay off)."""
    if half_life_days <= 0 or not math.isfinite(half_life_days) or age <= 0:
        return 1.0
    return float(0.5 ** (age / half_life_days))


# --------------------------------------------------------------------------- MMR
def word_set(text: str) -> frozenset[str]:
    """Lower-cased word set of a text (the similarity MMR uses without vectors)."""
    return frozenset(_WORDS.findall(text.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b| (0 for two empty sets)."""
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def cosine_matrix(vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    """Pairwise cosine similarities of the rows of ``vectors``."""
    import numpy as np

    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    unit = (v / np.where(norms > 0, norms, np.float32(1.0))).astype(np.float32)
    return unit @ unit.T


def mmr_order(
    relevance: Sequence[float],
    similarity: Callable[[int, int], float] | NDArray[np.float32],
    lam: float = 0.7,
    k: int | None = None,
) -> list[int]:
    """Indices of the candidates in MMR order (the first ``k``; all by default).

    ``relevance``: the candidates' scores (any scale; min-max normalised here). ``similarity``:
    a callable ``(i, j) -> 0..1`` or a square matrix (e.g. :func:`cosine_matrix`). ``lam`` = 1
    keeps the relevance order; 0 maximises diversity. Ties go to the more relevant candidate,
    then the earlier one, so the order is deterministic.
    """
    n = len(relevance)
    k = n if k is None else max(0, min(k, n))
    if n == 0 or k == 0:
        return []
    lo, hi = min(relevance), max(relevance)
    span = hi - lo
    rel = [(r - lo) / span if span > 0 else 1.0 for r in relevance]
    sim: Callable[[int, int], float]
    if callable(similarity):
        sim = similarity
    else:
        matrix = similarity

        def sim(i: int, j: int) -> float:
            return float(matrix[i, j])

    # max similarity of each remaining candidate to the picked set, updated incrementally
    max_sim = [0.0] * n
    remaining = list(range(n))
    picked: list[int] = []
    while remaining and len(picked) < k:
        best, best_value = remaining[0], -math.inf
        for i in remaining:
            value = lam * rel[i] - (1.0 - lam) * max_sim[i]
            if value > best_value + 1e-12 or (abs(value - best_value) <= 1e-12 and rel[i] > rel[best]):
                best, best_value = i, value
        picked.append(best)
        remaining.remove(best)
        for i in remaining:
            s = sim(best, i)
            if s > max_sim[i]:
                max_sim[i] = s
    return picked


# --------------------------------------------------------------------------- overlap reranker
def term_positions(terms: Sequence[str]) -> dict[str, list[int]]:
    """Each distinct term of a document with its positions (the form :func:`overlap_scores`
    reads fastest: a cached document costs one dictionary look-up per query term)."""
    out: dict[str, list[int]] = {}
    for i, t in enumerate(terms):
        found = out.get(t)
        if found is None:
            out[t] = [i]
        else:
            found.append(i)
    return out


class _Batch:
    """The query-term occurrences of a set of documents, read from the forward index only when
    a mapping is read as one (the overlap reranker reads the features alone)."""

    __slots__ = ("_load", "_occ", "asked", "terms")

    def __init__(self, asked: frozenset[str], terms: Sequence[str], load: Callable[[], Any]) -> None:
        self.asked = asked  # every query term looked for (known to the index or not)
        self.terms = terms  # term of each code
        # () -> (bounds, codes, pos): document i's occurrences are codes / pos[bounds[i]:bounds[i + 1]]
        self._load = load
        self._occ: tuple[list[int], list[int], list[int]] | None = None

    def occurrences(self) -> tuple[list[int], list[int], list[int]]:
        if self._occ is None:
            self._occ = self._load()
        return self._occ


class TermMatches(Mapping[str, Sequence[int]]):
    """One document's occurrences of the query terms, ``{term: [positions]}``, with what
    :func:`overlap_scores` reads already computed for the whole batch: ``matched`` (distinct
    query terms present) and ``window`` (the shortest window holding them all). The positions
    themselves are read from the forward index on first use."""

    __slots__ = ("_batch", "_dict", "_i", "matched", "window")

    def __init__(self, batch: _Batch, i: int, matched: int, window: int) -> None:
        self._batch, self._i = batch, i
        self._dict: dict[str, list[int]] | None = None
        self.matched, self.window = matched, window

    def _positions(self) -> dict[str, list[int]]:
        if self._dict is None:
            b = self._batch
            bounds, codes, pos = b.occurrences()
            start, end = bounds[self._i], bounds[self._i + 1]
            out: dict[str, list[int]] = {}
            for c, p in zip(codes[start:end], pos[start:end], strict=True):
                out.setdefault(b.terms[c], []).append(p)
            self._dict = out
        return self._dict

    def __getitem__(self, term: str) -> Sequence[int]:
        return self._positions()[term]

    def __iter__(self) -> Iterator[str]:
        return iter(self._positions())

    def __len__(self) -> int:
        return self.matched

    def proximity(self, asked: frozenset[str]) -> float | None:
        """``matched / window`` (``matched`` when fewer than two terms match), or ``None``
        when these matches were computed for another set of query terms."""
        if asked != self._batch.asked:
            return None
        return self.matched / self.window if self.matched > 1 else float(self.matched)


def _bounds(n_docs: int, owner: Any) -> list[int]:
    """Where each of ``n_docs`` documents' occurrences start (and the last ends), ``owner``
    ascending."""
    return np.searchsorted(np.asarray(owner, dtype=np.int64), np.arange(n_docs + 1)).tolist()  # type: ignore[no-any-return]


def window_features(
    n_docs: int, n_terms: int, owner: Any, codes: Any, pos: Any
) -> tuple[list[int], list[int]]:
    """For each of ``n_docs`` documents, from their query-term occurrences (for each its
    document ``owner``, ascending, the index of its term among ``n_terms``, its position,
    ascending within a document): how many distinct terms it holds and the length of the
    shortest window holding them all (0 for none, 1 for one). Computed for all documents at
    once: for each occurrence taken as a window's right end, the left end is the earliest of
    the latest occurrence so far of each of the document's terms."""
    owner = np.asarray(owner, dtype=np.int64)
    codes, pos = np.asarray(codes, dtype=np.int64), np.asarray(pos, dtype=np.int64)
    if not len(owner):
        return [0] * n_docs, [0] * n_docs
    bounds = np.searchsorted(owner, np.arange(n_docs + 1))
    n_terms = max(1, n_terms)
    present = np.zeros((n_docs, n_terms), dtype=np.bool_)
    present[owner, codes] = True
    matched = present.sum(axis=1)
    span = int(pos.max()) + 2
    key = owner * span + pos  # strictly increasing
    floor = owner * span  # a key below this belongs to an earlier document
    # All terms at once, one row each: the latest occurrence of the term up to each occurrence.
    last = np.where(codes == np.arange(n_terms)[:, None], key, -1)
    np.maximum.accumulate(last, axis=1, out=last)
    needed = present[owner].T  # whether the occurrence's document holds the term
    left = np.where(needed, last, key).min(axis=0)
    # A window is complete when every term of its document occurs in it: a term not seen yet
    # in this document has its latest occurrence before the document (or none: -1).
    width = np.where(left >= floor, key - left + 1, np.iinfo(np.int64).max)
    starts = bounds[:-1][matched > 0]
    best = np.zeros(n_docs, dtype=np.int64)
    best[matched > 0] = np.minimum.reduceat(width, starts)
    return matched.tolist(), best.tolist()


def term_matches(
    asked: Sequence[str],
    terms: Sequence[str],
    matched: Sequence[int],
    window: Sequence[int],
    occurrences: Callable[[], tuple[Any, Any, Any]],
) -> list[TermMatches]:
    """:class:`TermMatches` of documents whose features (``matched``, ``window``: see
    :func:`window_features`) are known; ``occurrences()`` gives their occurrences of ``terms``
    (``owner``, ``codes``, ``pos`` as :func:`window_features` reads them) when a mapping is read."""
    n_docs = len(matched)

    def load() -> tuple[list[int], list[int], list[int]]:
        owner, codes, pos = occurrences()
        return _bounds(n_docs, owner), np.asarray(codes).tolist(), np.asarray(pos).tolist()

    batch = _Batch(frozenset(asked), list(terms), load)
    return list(map(TermMatches, [batch] * n_docs, range(n_docs), matched, window))


def match_batch(
    asked: Sequence[str], terms: Sequence[str], n_docs: int, owner: Any, codes: Any, pos: Any
) -> list[TermMatches]:
    """:class:`TermMatches` of ``n_docs`` documents from their query-term occurrences: for
    each occurrence its document (``owner``, ascending), the index of its term in ``terms`` and
    its position (ascending within a document); see :func:`window_features`."""
    matched, window = window_features(n_docs, len(terms), owner, codes, pos)
    return term_matches(asked, terms, matched, window, lambda: (owner, codes, pos))


# Whitespace other than ASCII's (str.split() splits there too): such a string is re-spaced
# before the compiled scan, which separates words at ASCII whitespace only.
_WIDE_SPACE = re.compile("[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_NOT_ONE_SPACE = re.compile("[^\\S ]|  ")  # whitespace other than single spaces


def lex_positions(terms: Sequence[str], lexes: Sequence[str | None]) -> list[tuple[list[int], list[int]]]:
    """For each document given as its terms joined by spaces, the occurrences of the distinct
    ``terms`` in it: (index in ``terms``, position) lists, by position, the positions of
    ``lex.split()``. The compiled scan (``_vec.lex_positions``) compares each word's bytes
    with the terms' (~10x the regular expression's speed on a search's 60 rows); without it, or
    with ``GOCLAW_SEARCH_NUMPY=1``, one regular expression finds the terms and the spaces
    before a match give its position."""
    if not terms:
        return [([], []) for _ in lexes]
    if compiled is not None:
        given = list(lexes)
        for k, lex in enumerate(given):
            if lex and not lex.isascii() and _WIDE_SPACE.search(lex):
                given[k] = " ".join(lex.split())
        found: list[tuple[list[int], list[int]]] = compiled.lex_positions(list(terms), given)
        return found
    return _lex_positions(terms, lexes)


def _lex_positions(terms: Sequence[str], lexes: Sequence[str | None]) -> list[tuple[list[int], list[int]]]:
    """:func:`lex_positions` by one regular expression (the version without the compiled module)."""
    code = {t: k for k, t in enumerate(terms)}
    find = re.compile(" (" + "|".join(map(re.escape, terms)) + ")(?= )").finditer
    out: list[tuple[list[int], list[int]]] = []
    for lex in lexes:
        codes: list[int] = []
        pos: list[int] = []
        out.append((codes, pos))
        if not lex:
            continue
        if lex[0] == " " or lex[-1] == " " or _NOT_ONE_SPACE.search(lex):
            lex = " ".join(lex.split())
        padded = f" {lex} "
        n = last = 0
        for m in find(padded):
            at = m.start()
            n += padded.count(" ", last, at)
            last = at
            pos.append(n)
            codes.append(code[m.group(1)])
    return out


def positions_matches(
    asked: Sequence[str], terms: Sequence[str], found: Sequence[tuple[list[int], list[int]]]
) -> list[TermMatches]:
    """One batch of :class:`TermMatches` from each document's occurrences of ``terms`` (as
    :func:`lex_positions` gives them), the features computed for all at once."""
    owner = [i for i, (codes, _p) in enumerate(found) for _ in codes]
    codes = [c for cs, _p in found for c in cs]
    pos = [p for _c, ps in found for p in ps]
    return match_batch(asked, terms, len(found), owner, codes, pos)


def overlap_scores(
    query_terms: Sequence[str],
    docs_terms: Sequence[Sequence[str] | Mapping[str, Sequence[int]]],
    scores: Sequence[float],
    weight: float = 0.3,
    groups: Sequence[Hashable] | None = None,
) -> list[float]:
    """Scores of a no-network reranker: ``score × (1 - weight + weight × (coverage +
    proximity) / 2)``, where ``coverage`` is the share of the distinct query terms a document
    contains and ``proximity`` is ``m / w``, ``w`` the length (in terms) of the shortest window
    holding all ``m`` matched terms (1 for a single matched term; the variant that also scales
    proximity by coverage measured worse, docs/memory.md). A document with every query term
    side by side keeps its score; one with none keeps ``1 - weight`` of it, so scores stay on
    the fused scale (a score threshold still means the same); when no document has any query
    term, nothing changes. A document is its term sequence or its :func:`term_positions`;
    terms are the retrieval tokenizer's (:func:`goclaw_search.tokenize.terms`).

    ``groups`` (one key per document, e.g. its file): the documents of one group share their
    coverage, the share of the query terms *any* of them contains, so a file whose chunks
    split the query's words between them is covered as a whole; proximity stays each
    document's own."""
    wanted = frozenset(query_terms)
    if not wanted:
        return list(scores)
    features = _batch_features(docs_terms, wanted)
    if features is None:
        features = [_features(d, wanted) for d in docs_terms]
    if not any(matched for matched, _p in features):
        # Nothing to tell the candidates apart by (a match in meaning only): leave the scores
        # alone rather than scale them all down.
        return list(scores)
    n = len(wanted)
    covered = (
        [m for m, _p in features] if groups is None else _group_matched(docs_terms, features, wanted, groups)
    )
    return [
        score * (1.0 - weight + weight * (matched / n + proximity) / 2.0)
        for matched, (_m, proximity), score in zip(covered, features, scores, strict=True)
    ]


def _group_matched(
    docs: Sequence[Sequence[str] | Mapping[str, Sequence[int]]],
    features: Sequence[tuple[int, float]],
    wanted: frozenset[str],
    groups: Sequence[Hashable],
) -> list[int]:
    """Each document's number of distinct query terms present in its group (a document alone
    in its group keeps its own count; the terms themselves are read only for groups of two or
    more documents of which one matches)."""
    members: dict[Hashable, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    out = [m for m, _p in features]
    for found in members.values():
        if len(found) < 2 or not any(out[i] for i in found):
            continue
        union: set[str] = set()
        for i in found:
            d = docs[i]
            union.update(wanted.intersection(d.keys() if isinstance(d, Mapping) else d))
        for i in found:
            out[i] = len(union)
    return out


def _batch_features(
    docs: Sequence[Sequence[str] | Mapping[str, Sequence[int]]], wanted: frozenset[str]
) -> list[tuple[int, float]] | None:
    """The features of documents that are all :class:`TermMatches` of one batch computed for
    ``wanted`` (a memory search's candidates), read without a call per document; else None."""
    batch = None
    matches: list[TermMatches] = []
    for d in docs:
        if type(d) is not TermMatches or (batch is not None and d._batch is not batch):
            return None
        batch = d._batch
        matches.append(d)
    if batch is None or batch.asked != wanted:
        return None
    return [(d.matched, d.matched / d.window if d.matched > 1 else float(d.matched)) for d in matches]


def _features(doc: Sequence[str] | Mapping[str, Sequence[int]], wanted: frozenset[str]) -> tuple[int, float]:
    """(distinct query terms in ``doc``, their proximity)."""
    if isinstance(doc, TermMatches):
        proximity = doc.proximity(wanted)
        if proximity is not None:
            return doc.matched, proximity
    present = wanted.intersection(doc.keys() if isinstance(doc, Mapping) else doc)
    return len(present), _proximity(doc, present) if len(present) > 1 else float(len(present))


def _proximity(doc: Sequence[str] | Mapping[str, Sequence[int]], present: Set[str]) -> float:
    """``len(present) / w``, ``w`` the shortest window holding every term of ``present`` (a
    sliding window over the matched positions only)."""
    if isinstance(doc, Mapping):
        hits = sorted((i, t) for t in present for i in doc[t])
    else:
        hits = [(i, t) for i, t in enumerate(doc) if t in present]
    need = len(present)
    counts: dict[str, int] = {}
    have = 0
    left = 0
    best = hits[-1][0] - hits[0][0] + 1
    for pos, t in hits:
        counts[t] = counts.get(t, 0) + 1
        if counts[t] == 1:
            have += 1
        while have == need:
            lpos, lt = hits[left]
            best = min(best, pos - lpos + 1)
            counts[lt] -= 1
            if counts[lt] == 0:
                have -= 1
            left += 1
    return need / best


def region_scores(
    files: Sequence[Hashable], spans: Sequence[tuple[int, int]], scores: Sequence[float], penalty: float
) -> list[float]:
    """Scores with a file's further regions scored down, so that one document's second match
    does not take a place before other documents' best ones. Taken best first, a candidate
    whose line span ``(first, last)`` overlaps or adjoins (the next line) a region of its file
    found before joins that region (as the results merge them); any other starts a new region
    of its file. A candidate in its file's ``r``-th region (0 the first) is scored
    ``score × penalty ** r``; ``penalty`` 1 changes nothing, 0 puts every file's first region
    before any second one."""
    out = list(scores)
    if penalty == 1.0:
        return out
    regions: dict[Hashable, list[list[int]]] = {}  # file -> [first, last, rank] per region
    for i in sorted(range(len(scores)), key=lambda i: -scores[i]):
        first, last = spans[i]
        found = regions.setdefault(files[i], [])
        touching = [r for r in found if first <= r[1] + 1 and last >= r[0] - 1]
        if touching:
            keep = min(touching, key=lambda r: r[2])
            keep[0], keep[1] = min(keep[0], first), max(keep[1], last)
            rank = keep[2]
        else:
            rank = len(found)
            found.append([first, last, rank])
        if rank:
            out[i] = scores[i] * penalty**rank
    return out
