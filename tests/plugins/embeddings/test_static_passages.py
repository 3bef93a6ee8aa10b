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


_TRICKY = [
    "Hello", "HELLO,World!", "ORD-6099229", "($1,637)", "/srv/billing/exports/1203.csv", "2024-06-23",
    "don't", "e.g.", "x²", "café", "naïve", "Straße", "日本語", "東京tower", "x\x00y", "\x7f", "ﬁne", "½",
    "a\u200bb", "\ufeffabc", "[UNK]", "a[UNK]b", "[unk]", "[CLS]x", "[MASK]", "##ing", "#", "##", "~~~",
    "a" * 99, "a" * 100, "a" * 101, "b" * 150 + ",", "x," * 300, "," * 512, "," * 513, "zzqxj",
    "qwertyuiopasdf", "123456789012345678901234567890", "$$$", "`code`",
    "<tag>", "{a:1}", "|", "@user", "α-beta",
]  # fmt: skip


def test_the_python_wordpiece_gives_the_tokenizer_ids(emb: StaticEmbedder) -> None:
    """Printable ASCII pieces by the Python path: the tokenizer's ids (unknown tokens, long
    words, added tokens, truncation); other pieces go to the tokenizer."""
    from goclaw_embeddings.static_model import _WordPiece

    assert emb._tokenizer is not None
    fast = _WordPiece.of(emb._tokenizer)
    assert fast is not None
    rng = np.random.default_rng(11)
    chars = np.array(list("abcXYZ0129.,-#$[]()'/_~!?"))
    pieces = _TRICKY + ["".join(rng.choice(chars, size=int(rng.integers(1, 40)))) for _ in range(3_000)]
    expected = [e.ids for e in emb._tokenizer.encode_batch(pieces, add_special_tokens=False)]
    taken = 0
    for piece, ids in zip(pieces, expected, strict=True):
        got = fast.ids(piece)
        if got is not None:
            taken += 1
            assert got == ids, piece
    assert taken > 3_000
    assert fast.ids("café") is None and fast.ids("[UNK]") is None and fast.ids("," * 513) is None
    unk = emb._conf()["unk_token_id"]
    assert emb._piece_ids(_TRICKY) == [[t for t in ids if t != unk] for ids in expected[: len(_TRICKY)]]
