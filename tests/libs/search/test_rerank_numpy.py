"""The reranker's features and passage scores in numpy (goclaw_search.forward,
goclaw_search.passage_sketches) against brute force: the shortest window holding every matched
query term, the query terms' positions in stored term strings, and each slot's best passage
cosine from its sketch."""

from __future__ import annotations

import itertools
import random

import numpy as np

from goclaw_search.forward import ForwardIndex
from goclaw_search.passage_sketches import PassageSketch, PassageSketches, sketch_cosines, token_dots
from goclaw_search.rerank import _lex_positions, lex_positions, overlap_scores, positions_matches


def test_the_features_are_the_shortest_windows() -> None:
    rng = random.Random(9)
    for _ in range(300):
        n_q = rng.randint(1, 5)
        doc = [rng.randrange(n_q + 3) for _ in range(rng.randint(0, 40))]
        fwd = ForwardIndex()
        fwd.append(np.asarray(doc, dtype=np.int64), np.asarray([len(doc)], dtype=np.int64))
        names = [f"t{i}" for i in range(n_q)]
        [found] = fwd.matches(names, names, list(range(n_q)), [0])
        present = {t for t in doc if t < n_q}
        best = 0
        if present:
            best = min(
                b - a + 1
                for a in range(len(doc))
                for b in range(a, len(doc))
                if present <= set(doc[a : b + 1])
            )
        assert (found.matched, found.window) == (len(present), best)
        assert {k: list(v) for k, v in found.items()} == {
            f"t{t}": [i for i, x in enumerate(doc) if x == t] for t in sorted(present)
        }


def _random_sketch(rng: random.Random) -> PassageSketch | None:
    if rng.random() < 0.15:
        return None
    n_seg = rng.randint(1, 7)
    seg_len = [rng.randint(1, 9) for _ in range(n_seg)]
    passages = [
        sorted(rng.sample(range(n_seg), rng.randint(1, min(3, n_seg)))) for _ in range(rng.randint(1, 6))
    ]
    return PassageSketch(
        np.asarray([rng.randrange(600) for _ in range(sum(seg_len))], dtype=np.uint16),
        np.asarray(seg_len, dtype=np.uint16),
        np.asarray([r for p in passages for r in p], dtype=np.uint8),
        np.asarray([len(p) for p in passages], dtype=np.uint8),
        np.asarray([rng.uniform(0.2, 3.0) for _ in passages], dtype=np.float32),
    )


def _best(sketch: PassageSketch | None, scores: np.ndarray) -> float:
    """A sketch's best passage cosine, passage by passage."""
    if sketch is None:
        return 0.0
    bounds = np.concatenate([[0], np.cumsum(sketch.seg_len.astype(np.int64))])
    seg = [float(scores[sketch.tokens[a:b]].astype(np.float64).sum()) for a, b in itertools.pairwise(bounds)]
    refs, best, at = sketch.refs.tolist(), 0.0, 0
    for count, norm in zip(sketch.nref.tolist(), sketch.norms.tolist(), strict=True):
        best = max(best, sum(seg[r] for r in refs[at : at + count]) / norm)
        at += count
    return best


def test_best_cosines_are_each_slots_best_passage() -> None:
    rng = random.Random(4)
    store = PassageSketches()
    sketches = [_random_sketch(rng) for _ in range(200)]
    store.append(sketches[:120])
    store.append(sketches[120:])  # two parts, joined on the first read
    matrix = np.asarray(np.random.default_rng(5).normal(size=(600, 16)), dtype=np.float32)
    q = matrix[7] / np.linalg.norm(matrix[7])
    every = matrix @ q
    for slots in ([], [3], [5, -1, 199, 250, 5, 0], list(range(200))):
        best, has = store.best_cosines(slots, matrix, q)
        want = [_best(sketches[s] if 0 <= s < 200 else None, every) for s in slots]
        assert np.allclose(best, want, atol=1e-6)
        assert has.tolist() == [0 <= s < 200 and sketches[s] is not None for s in slots]
        batch = store.select(slots)
        assert np.array_equal(best, sketch_cosines(batch, token_dots(matrix, q, batch.tokens)))


def test_lex_positions_are_the_positions_in_the_split_terms() -> None:
    """The query terms found in stored ``lex`` strings: the positions ``lex.split()`` gives them,
    and the reranker's scores of those term lists, whatever the terms hold (prefixes of each
    other, regular-expression characters, a term repeated in the query) and however the string
    is spaced."""
    rng = random.Random(11)
    vocab = ["13", "13:30", "30", "a.b", "a+b", "c++", "kite", "kites", "ki", "x", "née", "$5"]
    for _ in range(300):
        asked = [rng.choice(vocab) for _ in range(rng.randint(1, 5))]
        docs = [[rng.choice(vocab) for _ in range(rng.randint(0, 30))] for _ in range(rng.randint(1, 8))]
        lexes: list[str | None] = [" ".join(d) for d in docs]
        lexes[0] = None if rng.random() < 0.2 else lexes[0]
        if rng.random() < 0.3:  # runs of spaces, spaces at the ends
            lexes = [f"  {lex.replace(' ', '   ')} " if lex else lex for lex in lexes]
        if rng.random() < 0.3:  # other whitespace, ASCII or not, that str.split() splits at
            space = rng.choice(["\t", "\n", "\x1c", "\u3000", "\xa0 "])
            lexes = [lex.replace(" ", space) if lex else lex for lex in lexes]
        distinct = list(dict.fromkeys(asked))
        # The compiled scan (when built) and the regular expression find the same occurrences.
        assert lex_positions(distinct, lexes) == _lex_positions(distinct, lexes)
        found = positions_matches(asked, distinct, lex_positions(distinct, lexes))
        for lex, m in zip(lexes, found, strict=True):
            terms = (lex or "").split()
            assert {k: list(v) for k, v in m.items()} == {
                t: [i for i, x in enumerate(terms) if x == t] for t in dict.fromkeys(asked) if t in terms
            }
        plain = [(lex or "").split() for lex in lexes]
        scores = [rng.uniform(0.1, 1.0) for _ in lexes]
        files = [rng.randrange(3) for _ in lexes]
        assert overlap_scores(asked, found, scores, 0.3, files) == overlap_scores(
            asked, plain, scores, 0.3, files
        )
