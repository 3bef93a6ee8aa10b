"""The static embedder's passage sketches (goclaw_embeddings.static_passages): the fast paths
give the same numbers, bit for bit, as the plain ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goclaw_embeddings import static_passages as sp
from goclaw_embeddings.static_model import StaticEmbedder
from goclaw_search.passage_sketches import spans, starts


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
    entries = spans(starts(seg_tokens)[ref_seg], width)
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


# ------------------------------------------------------------------ compiled and numpy paths

needs_compiled = pytest.mark.skipif(
    sp._vec is None, reason="goclaw_search._vec is not built (or GOCLAW_SEARCH_NUMPY=1)"
)

# Characters that make pieces and segments: every whitespace character str.split knows, the
# segment joiner, accents, CJK, punctuation, Markdown markers, a lone surrogate.
_ALPHABET = [
    *"ab Zé東-#*`~.,!()[]0123456789\n\x00\u0301\u00df\u0130\u03a3\U0001f600\udc80",
    *(chr(c) for c in range(0x110000) if chr(c).isspace()),
]
_text = st.lists(st.sampled_from(_ALPHABET), max_size=60).map("".join)


def _same(a: list[object], b: list[object]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        for u, v in zip(x, y, strict=True):  # type: ignore[call-overload]
            assert u.dtype == v.dtype and u.tobytes() == v.tobytes()


@needs_compiled
@settings(max_examples=150, deadline=None)
@given(batches=st.lists(st.lists(_text, max_size=8), min_size=1, max_size=4), limit=st.integers(1, 40))
def test_the_compiled_table_numbers_pieces_as_the_dictionary(batches: list[list[str]], limit: int) -> None:
    """Batch after batch (the memory forgotten past ``limit`` pieces), the compiled table gives
    each piece the dictionary's number and lists the same new pieces."""
    table, plain = sp.PieceMemory(limit, compiled=True), sp.PieceMemory(limit, compiled=False)
    for segments in batches:
        has_end = any(sp._END in s for s in segments)
        got, want = table.number(segments, has_end), plain.number(segments, has_end)
        assert got.tolist() == want.tolist() and table.new == plain.new and table.size == plain.size
        n = len(table.new)
        for m in (table, plain):
            m.add(np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64))


@settings(max_examples=60, deadline=None)
@given(
    pieces=st.lists(
        st.text(st.characters(exclude_categories=["Cs", "Zs", "Zl", "Zp", "Cc"]), min_size=1),
        min_size=1,
        max_size=30,
        unique=True,
    )
)
def test_pieces_tokenised_as_one_string_equal_each_alone(emb: StaticEmbedder, pieces: list[str]) -> None:
    """The new pieces tokenised as one string, told apart by offsets, get the token ids each
    gets alone (unknown tokens dropped; a piece longer than the tokenizer's truncation as it
    truncates it)."""
    pieces = [p for p in pieces if len(p.split()) == 1]
    if not pieces:
        return
    memory = sp.PieceMemory(1000)
    memory.new = pieces
    counts, ids = sp._tokenise(emb, memory)
    want = emb._piece_ids(pieces)
    assert counts.tolist() == [len(w) for w in want]
    assert ids.tolist() == [t for w in want for t in w]


def test_a_piece_past_the_truncation_is_cut_as_alone(emb: StaticEmbedder) -> None:
    pieces = ["ok", "," * 700, "(x)" * 300, "fine"]
    memory = sp.PieceMemory(1000)
    memory.new = pieces
    counts, ids = sp._tokenise(emb, memory)
    want = emb._piece_ids(pieces)
    assert counts.tolist() == [len(w) for w in want] and counts[1] == 512
    assert ids.tolist() == [t for w in want for t in w]


@needs_compiled
@settings(max_examples=80, deadline=None)
@given(texts=st.lists(_text.map(lambda t: t.replace("\udc80", "")), max_size=12))
def test_compiled_and_numpy_paths_give_the_same_sketches(
    emb: StaticEmbedder, texts: list[str], monkeypatch_module: pytest.MonkeyPatch
) -> None:
    """Sketches by the compiled loops (numbering, token gather, norms) equal the numpy path's,
    bit for bit, dtypes too."""
    compiled = sp.sketches(emb, texts, sp.PieceMemory(10_000))
    vec = sp._vec
    monkeypatch_module.setattr(sp, "_vec", None)
    try:
        plain = sp.sketches(emb, texts, sp.PieceMemory(10_000))
    finally:
        monkeypatch_module.setattr(sp, "_vec", vec)
    _same(compiled, plain)


@pytest.fixture(scope="module")
def monkeypatch_module() -> object:
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@needs_compiled
def test_compiled_and_numpy_paths_on_notes(emb: StaticEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same on notes: headings, list items, code fences, repeated pieces, in calls of a job."""
    from tests.plugins.embeddings.test_static_embedder import NOTES

    texts = [*NOTES, "# a\n```\n# not a heading\n```\n1. one\n2. two\n\n" * 3, "x\x00y\n\n- \x00 z"] * 3
    job = emb.passage_sketcher()
    compiled = [s for lo in range(0, len(texts), 4) for s in job(texts[lo : lo + 4])]
    monkeypatch.setattr(sp, "_vec", None)
    job = emb.passage_sketcher()
    plain = [s for lo in range(0, len(texts), 4) for s in job(texts[lo : lo + 4])]
    _same(compiled, plain)
    assert any(len(s.norms) for s in compiled)


@needs_compiled
@pytest.mark.parametrize("float16", [True, False])
def test_compiled_norms_equal_numpy_norms(emb: StaticEmbedder, float16: bool) -> None:
    """Passage norms, compiled and numpy, bit for bit: the bundled float16 matrix (segment sums)
    and other values (token after token), long passages past the exact-sum bound too."""
    rng = np.random.default_rng(11)
    matrix = emb._matrix if float16 else rng.standard_normal((60, 16)).astype(np.float32)
    assert matrix is not None
    for n, longest in ((50, 5), (2_000, 30), (40, 4_000)):
        layout = _layout(rng, matrix.shape[0], n, longest)
        want = sp._norms(matrix, *layout)
        top = sp._float16_top(matrix)
        got = sp._vec.passage_norms(matrix, *layout, -1.0 if top is None else top)
        assert got.tobytes() == want.tobytes()


@needs_compiled
def test_compiled_loops_refuse_arrays_out_of_range() -> None:
    """Bad arrays raise ValueError, never read or write out of bounds."""
    i64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    with pytest.raises(ValueError):
        sp._vec.piece_tokens(i64(0, 5), i64(0), i64(1), np.zeros(1, np.int32), 1)
    with pytest.raises(ValueError):
        sp._vec.piece_tokens(i64(0), i64(0), i64(3), np.zeros(1, np.int32), 1)
    m = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError):
        sp._vec.passage_norms(m, i64(7), i64(1), i64(0), i64(1), 1.0)
    with pytest.raises(ValueError):
        sp._vec.passage_norms(m, i64(0), i64(1), i64(2), i64(1), 1.0)
    data = np.frombuffer(b"a b c", dtype=np.uint8)
    with pytest.raises(ValueError):  # a table that could fill up
        sp._vec.passage_pieces(
            data, i64(5), np.full(4, -1, np.int64), np.zeros(64, np.uint8), i64(*[0] * 8), i64(*[0] * 8), 0, 0
        )
