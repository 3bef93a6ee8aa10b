"""Skill search: BM25 (spec §10) and the hybrid merge with vector similarity (spec §11).

BM25 follows the spec exactly (DECISIONS.md "BM25"): tokens are the lowercased text with
every non-alphanumeric character turned into a space, tokens of one character dropped;
``k1 = 1.2``, ``b = 0.75``, ``IDF(t) = ln((N - df + 0.5) / (df + 0.5) + 1)``, and
``score(d) = Σ_query-tokens IDF(t) · tf · (k1 + 1) / (tf + k1 · (1 - b + b · |d| / avgDL))``
(a repeated query token counts again, as in the reference). Documents scoring 0 are dropped.

Speed comes from precomputing, at build time, each (term, document) contribution in an
inverted index of numpy arrays: a query is then a few vector additions over the postings of
its terms instead of a pass over every document.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

K1 = 1.2
B = 0.75
_NON_ALNUM = re.compile(r"[\W_]+")


def tokenize(text: str) -> list[str]:
    """The spec §10 tokenizer."""
    return [t for t in _NON_ALNUM.split(text.lower()) if len(t) > 1]


class BM25Index:
    """An in-memory BM25 index over ``docs`` (document ``i`` is ``docs[i]``)."""

    SMALL = 80  # total postings up to which a query is scored in pure Python (tuned here)

    def __init__(self, docs: Sequence[str], *, k1: float = K1, b: float = B) -> None:
        import numpy as np

        self.n = len(docs)
        tokenized = [tokenize(d) for d in docs]
        lengths = [len(t) for t in tokenized]
        avgdl = (sum(lengths) / self.n) if self.n else 0.0
        postings: dict[str, tuple[list[int], list[float]]] = {}
        counts = [Counter(t) for t in tokenized]
        df: Counter[str] = Counter()
        for c in counts:
            df.update(c.keys())
        idf = {t: math.log((self.n - f + 0.5) / (f + 0.5) + 1.0) for t, f in df.items()}
        for i, c in enumerate(counts):
            norm = k1 * (1.0 - b + b * lengths[i] / avgdl) if avgdl else k1
            for term, tf in c.items():
                ids, ws = postings.setdefault(term, ([], []))
                ids.append(i)
                ws.append(idf[term] * tf * (k1 + 1.0) / (tf + norm))
        self.idf = idf
        self.avgdl = avgdl
        self._postings = {
            t: (np.asarray(ids, dtype=np.intp), np.asarray(ws, dtype=np.float64))
            for t, (ids, ws) in postings.items()
        }
        # The same postings as Python pairs: for short posting lists a dict accumulation
        # beats numpy's per-call overhead several times over.
        self._pairs = {t: list(zip(ids, ws, strict=True)) for t, (ids, ws) in postings.items()}

    def scores(self, query: str) -> Any:
        """BM25 score of every document (a float64 array of length ``n``)."""
        import numpy as np

        out = np.zeros(self.n, dtype=np.float64)
        for term in tokenize(query):
            post = self._postings.get(term)
            if post is not None:
                out[post[0]] += post[1]
        return out

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best ``(doc index, score)`` pairs with score > 0; ties keep doc order."""
        import numpy as np

        terms = [t for t in tokenize(query) if t in self._postings]
        if not terms or k <= 0:
            return []
        if sum(len(self._pairs[t]) for t in terms) <= self.SMALL:
            acc: dict[int, float] = {}
            for term in terms:
                for doc, w in self._pairs[term]:
                    acc[doc] = acc.get(doc, 0.0) + w
            return sorted(acc.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        if len(terms) == 1:
            ids, ws = self._postings[terms[0]]
            cand, vals = ids, ws
        else:
            out = np.zeros(self.n, dtype=np.float64)
            for term in terms:
                ids, ws = self._postings[term]
                out[ids] += ws
            cand = np.flatnonzero(out)
            vals = out[cand]
        if len(cand) > k:
            part = np.argpartition(-vals, k - 1)[:k]
            # Include every candidate tied with the k-th score so ties resolve by doc order.
            kth = vals[part].min()
            part = np.flatnonzero(vals >= kth)
            cand, vals = cand[part], vals[part]
        order = np.lexsort((cand, -vals))[:k]
        return [(int(cand[i]), float(vals[i])) for i in order]


def hybrid_merge(
    lexical: Sequence[tuple[str, float]],
    vector: Sequence[tuple[str, float]],
    *,
    lexical_weight: float = 0.3,
    vector_weight: float = 0.7,
    limit: int = 5,
) -> list[tuple[str, float]]:
    """Spec §11 / DECISIONS.md: BM25 normalised by its max × 0.3 + vector similarity × 0.7.

    One channel empty → the other alone at weight 1.0. Keys are skill slugs; ties sort by slug.
    """
    if not lexical and not vector:
        return []
    if not vector:
        lexical_weight, vector_weight = 1.0, 0.0
    elif not lexical:
        lexical_weight, vector_weight = 0.0, 1.0
    top = max((s for _k, s in lexical), default=0.0)
    merged: dict[str, float] = {}
    for key, score in lexical:
        merged[key] = merged.get(key, 0.0) + (score / top if top > 0 else 0.0) * lexical_weight
    for key, sim in vector:
        merged[key] = merged.get(key, 0.0) + sim * vector_weight
    ranked = sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))
    return ranked[:limit]


def cosine_top(matrix: Any, query_vec: Any, k: int) -> list[tuple[int, float]]:
    """Top ``k`` rows of a row-normalised ``matrix`` by cosine with ``query_vec`` (sim > 0)."""
    import numpy as np

    if matrix is None or len(matrix) == 0 or k <= 0:
        return []
    q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(q))
    if norm == 0 or q.shape[0] != matrix.shape[1]:
        return []
    sims = matrix @ (q / norm)
    idx = np.argsort(-sims, kind="stable")[:k]
    return [(int(i), float(sims[i])) for i in idx if sims[i] > 0]
