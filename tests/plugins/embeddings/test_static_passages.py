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


def _passages(rng: np.random.Generator, rows: int, n: int, longest: int) -> tuple[np.ndarray, np.ndarray]:
    per = rng.integers(1, longest + 1, size=n)
    owner = np.repeat(np.arange(n), per)
    return rng.integers(0, rows, size=len(owner)), owner


def test_the_sparse_sums_equal_the_ordered_sums(emb: StaticEmbedder) -> None:
    """The bundled matrix holds float16 values: the sparse product gives each norm bit for bit
    as the token-after-token loop (repeated tokens, long and short passages)."""
    matrix = emb._matrix
    assert matrix is not None and sp._float16_top(matrix) is not None
    rng = np.random.default_rng(7)
    tokens, owner = _passages(rng, 300, 2_000, 60)  # few distinct rows: many repeats
    assert len(tokens) >= sp._SPARSE_FROM
    fast = sp._norms(matrix, tokens, owner, 2_000)
    per = np.bincount(owner, minlength=2_000)
    plain = sp._ordered_sums(matrix, tokens, owner, per).astype(np.float32).astype(np.float64)
    expected = np.sqrt(np.add.accumulate(plain * plain, axis=1)[:, -1]).astype(np.float32)
    assert fast.tobytes() == expected.tobytes()


def test_a_matrix_of_other_values_is_summed_in_order() -> None:
    """Values that are not float16 values: no sparse product (its sums could round otherwise)."""
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((50, 8)).astype(np.float32)
    assert sp._float16_top(matrix) is None
    tokens, owner = _passages(rng, 50, 500, 30)
    per = np.bincount(owner, minlength=500)
    plain = sp._ordered_sums(matrix, tokens, owner, per).astype(np.float32).astype(np.float64)
    expected = np.sqrt(np.add.accumulate(plain * plain, axis=1)[:, -1]).astype(np.float32)
    assert sp._norms(matrix, tokens, owner, 500).tobytes() == expected.tobytes()
