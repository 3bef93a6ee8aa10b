"""The static embedder's passage sketches (goclaw_embeddings.static_passages): the fast paths
give the same numbers, bit for bit, as the plain ones."""

from __future__ import annotations

import numpy as np
import pytest

from goclaw_embeddings import static_passages as sp
from goclaw_embeddings.static_model import StaticEmbedder


@pytest.fixture(scope="module")
def emb() -> StaticEmbedder:
    e = StaticEmbedder()
    e.load()
    return e


def _layout(
    rng: np.random.Generator, rows: int, n: int, longest: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Random segments (tokens, tokens per segment) and passages of 1-3 of them (their
    segments, segments per passage)."""
    seg_tokens = rng.integers(1, longest + 1, size=2 * n)
    tokens = rng.integers(0, rows, size=int(seg_tokens.sum()))
    nref = rng.integers(1, 4, size=n)
    ref_seg = rng.integers(0, 2 * n, size=int(nref.sum()))
    return tokens, seg_tokens, ref_seg, nref


def _expected(matrix: np.ndarray, tokens, seg_tokens, ref_seg, nref) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The norms by the token-after-token loop."""
    width = seg_tokens[ref_seg]
    per = np.bincount(np.repeat(np.arange(len(nref)), nref), weights=width, minlength=len(nref)).astype(int)
    entries = sp._spans(sp._starts(seg_tokens)[ref_seg], width)
    owner = np.repeat(np.arange(len(nref)), per)
    plain = sp._ordered_sums(matrix, tokens[entries], owner, per).astype(np.float32).astype(np.float64)
    return np.sqrt(np.add.accumulate(plain * plain, axis=1)[:, -1]).astype(np.float32)


def test_the_sparse_sums_equal_the_ordered_sums(emb: StaticEmbedder) -> None:
    """The bundled matrix holds float16 values: the sparse products give each norm bit for bit
    as the token-after-token loop (repeated tokens, segments shared by passages)."""
    matrix = emb._matrix
    assert matrix is not None and sp._float16_top(matrix) is not None
    rng = np.random.default_rng(7)
    layout = _layout(rng, 300, 2_000, 30)  # few distinct rows: many repeats
    assert len(layout[0]) >= sp._SPARSE_FROM
    assert sp._norms(matrix, *layout).tobytes() == _expected(matrix, *layout).tobytes()


def test_a_matrix_of_other_values_is_summed_in_order() -> None:
    """Values that are not float16 values: no sparse product (its sums could round otherwise)."""
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((50, 8)).astype(np.float32)
    assert sp._float16_top(matrix) is None
    layout = _layout(rng, 50, 500, 20)
    assert sp._norms(matrix, *layout).tobytes() == _expected(matrix, *layout).tobytes()


def test_a_sketcher_tokenises_each_piece_once_across_its_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """``passage_sketcher()`` gives the same sketches as ``passage_sketches`` called step by
    step, and tokenises each distinct piece once over all its calls, where the steps alone
    tokenise again what the embedder's (here tiny) cache has dropped."""
    from goclaw_embeddings import static_model

    monkeypatch.setattr(static_model, "_PIECES_MAX", 8)
    rng = np.random.default_rng(5)
    words = [f"w{i}x" for i in range(60)] + ["kestrel", "pier", "ORD-61", "(note)"]
    texts = [
        "# Notes\n\n" + " ".join(rng.choice(words, size=int(rng.integers(3, 30)))) + "\n\n- " + str(i)
        for i in range(200)
    ]
    distinct = {w for t in texts for w in t.split()}

    def run(sketch: object, e: StaticEmbedder) -> tuple[list[object], int]:
        asked: list[int] = []  # pieces tokenised: by the embedder or as one string
        real, real_tokenise = e._piece_ids, sp._tokenise
        monkeypatch.setattr(e, "_piece_ids", lambda ws: asked.append(len(ws)) or real(ws))

        def tokenise(e: StaticEmbedder, memory: sp.PieceMemory) -> object:
            if not memory.cached:
                asked.append(len(memory.new))
            return real_tokenise(e, memory)

        monkeypatch.setattr(sp, "_tokenise", tokenise)
        out = [s for lo in range(0, len(texts), 16) for s in sketch(texts[lo : lo + 16])]  # type: ignore[operator]
        monkeypatch.undo()
        monkeypatch.setattr(static_model, "_PIECES_MAX", 8)
        return out, sum(asked)

    plain_emb, job_emb = StaticEmbedder(), StaticEmbedder()
    plain, plain_asked = run(plain_emb.passage_sketches, plain_emb)
    job, job_asked = run(job_emb.passage_sketcher(), job_emb)
    assert job_asked == len(distinct) < plain_asked
    for a, b in zip(plain, job, strict=True):
        for x, y in zip(a, b, strict=True):
            assert x.dtype == y.dtype and np.array_equal(x, y)
