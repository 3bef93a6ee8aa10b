"""Passage sketches (goclaw_search.passage_sketches; the static embedder's side in
goclaw_embeddings.static_passages): the passage step scored from what the index keeps, checked
against the straightforward reference, embedding every passage with embed()."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from goclaw_embeddings.static_model import StaticEmbedder
from goclaw_search.index import Doc, SearchIndex
from goclaw_search.passage_sketches import PassageSketch, PassageSketches, SketchBatch, sketch_cosines
from goclaw_search.passages import best_passage_cosine, passage_layout, passages
from tests.plugins.embeddings.test_static_embedder import NOTES as STATIC_NOTES

NOTES = [
    *STATIC_NOTES,  # the static embedder's passage tests' notes, and odder ones:
    "# Only\n## headings\n### here",
    "# Deploys\n```sh\n# not a heading\nkubectl rollout undo deploy/kestrel\n```\nAfter the fence.",
    "\u0000\u0001\n\u200b",  # no known token
]
QUERIES = [
    "Why did Kite Ceramics replace its secret credential?",
    "Mei refund",
    "résumé in Tokyo",
    "rollback",
]
_LINES = [
    "# Day", "## Topic: billing", "### deep", "#### deeper", "- Kestrel gateway rolled back", "1. first step",
    "plain text about invoices", "", "```", "# inside a fence", "~~~", "  continuation of the item",
    "- TCK-4471 approved by Mei", "Ünïcode café", "#not-a-heading", "* star item",
]  # fmt: skip


def _random_notes(n: int, seed: int = 5) -> list[str]:
    rnd = random.Random(seed)
    return ["\n".join(rnd.choice(_LINES) for _ in range(rnd.randint(0, 14))) for _ in range(n)]


@pytest.fixture(scope="module")
def emb() -> StaticEmbedder:
    return StaticEmbedder()


def test_the_layout_gives_the_passages() -> None:
    """passages() is its layout's segments joined: each heading a segment of its own, shared by
    the passages below it."""
    segments, layout = passage_layout(NOTES[0])
    assert segments[:2] == ["# 2026-11-12 (Thu)", "## TCK-4471 approved"]
    assert layout == [(0, 1, 2), (0, 1, 3)]
    assert passage_layout(NOTES[5]) == (["# Only", "## headings", "### here"], [(0,), (1,), (2,)])
    for text in NOTES + _random_notes(300):
        segments, layout = passage_layout(text)
        assert passages(text) == ["\n".join(segments[i] for i in p) for p in layout]


def test_the_layout_of_fences_indents_and_markers() -> None:
    """A fence's lines are plain text (a "# comment" too) until its own marker closes it; four
    spaces of indent, seven hashes or ten digits make no heading or item; a blank line of other
    whitespace ends a block, and any whitespace (up to 3) may indent a heading."""
    text = (
        "# Day\n    # not a heading\n```py\n# comment\n- in fence\n```\n## Topic\n"
        "1234567890. not an item\n123456789. item\n\x0b\n- a\n  continued\n####### seven\n"
        "~~~\n``` other marker\n~~~\n\u3000# wide space\ntext"
    )
    assert passage_layout(text) == (
        [
            "# Day", "    # not a heading", "```py\n# comment\n- in fence\n```", "## Topic",
            "1234567890. not an item", "123456789. item", "- a\n  continued\n####### seven",
            "~~~\n``` other marker\n~~~", "# wide space", "text",
        ],
        [(0, 1), (0, 2), (0, 3, 4), (0, 3, 5), (0, 3, 6), (0, 3, 7), (8, 9)],
    )  # fmt: skip


@pytest.mark.parametrize("query", QUERIES)
def test_sketch_cosines_equal_embedding_each_passage(emb: StaticEmbedder, query: str) -> None:
    """The token-score form (one score per distinct token, summed by segment and passage,
    divided by the passage's norm) gives what embedding every passage with embed() gives."""
    texts = NOTES + _random_notes(200)
    want = best_passage_cosine(emb.embed, query, texts)
    batch = SketchBatch.of(emb.passage_sketches(texts))
    got = sketch_cosines(batch, emb.token_similarity(query, batch.tokens))
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert (want > 0).sum() > 50 and want[3] == want[4] == want[7] == 0.0
    np.testing.assert_allclose(emb.passage_similarity(query, texts), want, atol=1e-5)


def test_a_query_that_embeds_to_nothing_scores_zero(emb: StaticEmbedder) -> None:
    batch = SketchBatch.of(emb.passage_sketches(NOTES))
    assert not sketch_cosines(batch, emb.token_similarity("", batch.tokens)).any()
    assert emb.token_similarity("", batch.tokens).shape == batch.tokens.shape


def test_the_store_selects_appends_compacts_and_saves(emb: StaticEmbedder, tmp_path: Path) -> None:
    """Slots without a sketch (None), appends in several parts, compaction and a save / load
    round trip through the search index: every selection still scores as the reference."""
    texts = NOTES + _random_notes(60, seed=9)
    query = QUERIES[0]
    want = best_passage_cosine(emb.embed, query, texts)
    sketches: list[PassageSketch | None] = list(emb.passage_sketches(texts))
    sketches[3] = sketches[10] = None
    idx = SearchIndex(4)
    vec = np.ones(4, dtype=np.float32)
    half = len(texts) // 2
    for lo, hi in ((0, half), (half, len(texts))):  # two upserts: two parts of the store
        idx.upsert([Doc(i, "", ["w"], vec, i, sketches[i]) for i in range(lo, hi)])

    def check(index: SearchIndex, ids: list[int]) -> None:
        slots = [index.slot_of.get(i, -1) for i in ids]
        batch = index.psk.select(slots)
        got = sketch_cosines(batch, emb.token_similarity(query, batch.tokens))
        expect = [want[i] if i in index.slot_of and sketches[i] is not None else 0.0 for i in ids]
        np.testing.assert_allclose(got, expect, atol=1e-5)
        assert batch.has.tolist() == [i in index.slot_of and sketches[i] is not None for i in ids]

    every = [*range(len(texts)), -1, 999]
    check(idx, every)
    check(idx, [12, 0, 3, 12, 45])  # any order, repeats
    idx.remove(range(0, len(texts), 3))
    idx.compact()
    check(idx, every)
    idx.save(tmp_path / "idx")
    loaded = SearchIndex.load(tmp_path / "idx")
    check(loaded, every)
    loaded.upsert([Doc(500, "", ["w"], vec, 1, emb.passage_sketches([NOTES[1]])[0])])  # on the mapped arrays
    sketches.extend([None] * (500 - len(sketches)) + [sketches[1]])
    want = np.append(want, np.zeros(500 - len(want)))
    want = np.append(want, want[1])
    check(loaded, [500, 1, 2])
    assert loaded.psk.nbytes > 0


def test_a_sketch_too_large_for_the_store_leaves_the_slot_to_the_text_path() -> None:
    """The store keeps a slot's layout in 16-bit words: a chunk of more than 65,535 segments
    (or tokens in one) is stored without a sketch rather than wrongly."""
    big = PassageSketch(
        np.ones(70_000, np.uint16), np.ones(70_000, np.uint32), np.zeros(1, np.uint32),
        np.ones(1, np.uint8), np.ones(1, np.float32),
    )  # fmt: skip
    store = PassageSketches()
    store.append([big, None])
    assert store.select([0, 1]).has.tolist() == [False, False]


def test_a_selection_larger_than_the_fast_path(emb: StaticEmbedder) -> None:
    sketches = emb.passage_sketches(NOTES[:2])
    store = PassageSketches()
    store.append(sketches * 2500)
    batch = store.select(list(range(5000)))
    assert batch.has.all() and len(batch.n_pass) == 5000
    np.testing.assert_array_equal(batch.tokens[: len(sketches[0].tokens)], sketches[0].tokens)


def test_sketches_of_any_integer_and_float_types_are_stored_alike(emb: StaticEmbedder) -> None:
    """A provider's sketch in int64 / float64 arrays, mixed in one append with the static
    embedder's uint8 / uint16 / float32 ones and empty slots, selects as the narrow copy."""
    narrow = list(emb.passage_sketches(NOTES))
    wide = [
        PassageSketch(*(a.astype(np.float64 if a.dtype.kind == "f" else np.int64) for a in s)) for s in narrow
    ]
    mixed: list[PassageSketch | None] = [
        w if i % 2 else n for i, (n, w) in enumerate(zip(narrow, wide, strict=True))
    ]
    mixed.insert(1, None)
    a, b = PassageSketches(), PassageSketches()
    a.append([*narrow[:1], None, *narrow[1:]])
    b.append(mixed[:3])
    b.append(mixed[3:])
    slots = list(range(len(mixed)))
    for x, y in zip(a.select(slots), b.select(slots), strict=True):
        np.testing.assert_array_equal(x, y)
