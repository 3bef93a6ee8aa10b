"""goclaw_search.rerank: temporal decay, MMR and the overlap reranker as pure
functions."""

from __future__ import annotations

from datetime import date

import numpy as np
import pytest

from goclaw_search.passages import best_passage_cosine, passage_scores, passages
from goclaw_search.rerank import (
    age_days,
    cosine_matrix,
    date_from_path,
    decay_factor,
    is_evergreen,
    jaccard,
    mmr_order,
    overlap_scores,
    term_positions,
    word_set,
)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("memory/2026-03-01.md", date(2026, 3, 1)),
        ("memory/2026/03/standup-2026-03-01.md", date(2026, 3, 1)),
        ("users/u1/memory/2025-12-31-call.md", date(2025, 12, 31)),
        ("memory/dreams/2026-11-02.md", date(2026, 11, 2)),
        ("MEMORY.md", None),
        ("memory/projects.md", None),
        ("memory/2026-13-45.md", None),  # not a date
        ("notes/2026-03-01.md", None),  # not under memory/
    ],
)
def test_date_from_path(path: str, expected: date | None) -> None:
    assert date_from_path(path) == expected


def test_decay_factor_halves_per_half_life() -> None:
    assert decay_factor(0, 30) == 1.0
    assert decay_factor(30, 30) == pytest.approx(0.5)
    assert decay_factor(60, 30) == pytest.approx(0.25)
    assert decay_factor(10, 0) == 1.0  # half-life 0: off
    assert decay_factor(-5, 30) == 1.0  # a note dated in the future does not grow


def test_age_from_name_else_mtime() -> None:
    now = 86_400.0 * (date(2026, 3, 11).toordinal() - date(1970, 1, 1).toordinal())
    assert age_days("memory/2026-03-01.md", now, lambda: 0.0) == pytest.approx(10.0)
    assert age_days("memory/topics/x.md", now, lambda: now - 3 * 86_400) == pytest.approx(3.0)
    assert age_days("memory/topics/x.md", now, lambda: None) is None


def test_evergreen_patterns() -> None:
    assert is_evergreen("MEMORY.md", ["MEMORY.md", "memory.md"])
    assert not is_evergreen("memory/2026-03-01.md", ["MEMORY.md", "memory.md"])
    assert is_evergreen("memory/topics/a/b.md", ["memory/topics/*"])


def test_mmr_drops_a_near_duplicate_from_the_top_3() -> None:
    relevance = [1.0, 0.98, 0.95, 0.93, 0.5]
    sim = np.full((5, 5), 0.1, dtype=np.float32)
    np.fill_diagonal(sim, 1.0)
    sim[0, 1] = sim[1, 0] = 0.95  # candidate 1 nearly repeats candidate 0
    assert mmr_order(relevance, sim, lam=1.0, k=3) == [0, 1, 2]  # relevance only
    top3 = mmr_order(relevance, sim, lam=0.7, k=3)
    assert top3 == [0, 2, 3]
    assert mmr_order(relevance, sim, lam=0.7) == [0, 2, 3, 1, 4]  # every candidate, once


def test_mmr_with_word_sets_and_vectors_agree_on_duplicates() -> None:
    texts = [
        "restart the gateway with systemctl restart gateway on host alpha",
        "restart the gateway with systemctl restart gateway on host beta",
        "the invoice for Acme was sent on Monday",
        "lunch menu: soup",
    ]
    sets = [word_set(t) for t in texts]
    assert jaccard(sets[0], sets[1]) > 0.7 > jaccard(sets[0], sets[2])
    relevance = [1.0, 0.99, 0.7, 0.2]
    assert mmr_order(relevance, lambda i, j: jaccard(sets[i], sets[j]), lam=1.0)[:2] == [0, 1]
    assert mmr_order(relevance, lambda i, j: jaccard(sets[i], sets[j]), lam=0.5)[:2] == [0, 2]
    vecs = np.array([[1.0, 0.0], [0.99, 0.05], [0.0, 1.0], [0.0, -1.0]], dtype=np.float32)
    assert mmr_order(relevance, cosine_matrix(vecs), lam=0.5)[:2] == [0, 2]
    assert mmr_order([], lambda i, j: 0.0) == []


def test_overlap_scores_reward_coverage_and_proximity() -> None:
    q = ["alpha", "beta"]
    near = ["x", "alpha", "beta", "y"]
    far = ["alpha", *(["z"] * 20), "beta"]
    one = ["alpha", "z"]
    none = ["z"]
    s = overlap_scores(q, [near, far, one, none], [1.0, 1.0, 1.0, 1.0], weight=0.3)
    assert s[0] == pytest.approx(1.0)  # every term, side by side: keeps its score
    assert s[0] > s[1] > s[3] and s[0] > s[2] > s[3]
    assert s[2] == pytest.approx(0.7 + 0.3 * (0.5 + 1.0) / 2)  # one term of two, proximity 1
    assert s[3] == pytest.approx(0.7)  # no query term: 1 - weight
    assert overlap_scores([], [near], [0.4]) == [0.4]
    assert overlap_scores(["gamma"], [near, none], [0.6, 0.5]) == [0.6, 0.5]  # no term anywhere


def _window_brute_force(doc: list[str], present: set[str]) -> float:
    """The shortest window holding every term of ``present``, by trying every start."""
    best = len(doc)
    for i in range(len(doc)):
        seen: set[str] = set()
        for j in range(i, len(doc)):
            if doc[j] in present:
                seen.add(doc[j])
            if seen == present:
                best = min(best, j - i + 1)
                break
    return len(present) / best


def test_overlap_scores_match_a_brute_force_window_in_both_document_forms() -> None:
    rng = np.random.default_rng(3)
    vocab = ["a", "b", "c", "d", "e", "f"]
    for _ in range(300):
        doc = [vocab[i] for i in rng.integers(0, len(vocab), size=int(rng.integers(1, 25)))]
        query = list({vocab[i] for i in rng.integers(0, len(vocab), size=3)})
        present = set(query) & set(doc)
        coverage = len(present) / len(set(query))
        proximity = _window_brute_force(doc, present) if len(present) > 1 else float(len(present))
        other = ["a", "b", "c", "d", "e", "f"]  # so some document always holds a query term
        want = 0.5 * (0.7 + 0.3 * (coverage + proximity) / 2)
        got_seq = overlap_scores(query, [doc, other], [0.5, 0.5])[0]
        got_pos = overlap_scores(query, [term_positions(doc), term_positions(other)], [0.5, 0.5])[0]
        assert got_seq == pytest.approx(want) and got_pos == pytest.approx(want)


# --------------------------------------------------------------------------- passages
def test_passages_are_list_items_and_paragraphs_under_their_headings() -> None:
    chunk = (
        "# 2026-11-12 (Thu)\n\n## TCK-4471 approved\n"
        "- Mei approved the refund\n  on the card on file.\n"
        "* Dana informed by email.\n"
        "1. first step\n\n"
        "A paragraph\nthat wraps.\n\n"
        "## Other\n### Deeper\n- under deeper\n"
        "## Last\n- under last\n"
    )
    assert passages(chunk) == [
        "# 2026-11-12 (Thu)\n## TCK-4471 approved\n- Mei approved the refund\n  on the card on file.",
        "# 2026-11-12 (Thu)\n## TCK-4471 approved\n* Dana informed by email.",
        "# 2026-11-12 (Thu)\n## TCK-4471 approved\n1. first step",
        "# 2026-11-12 (Thu)\n## TCK-4471 approved\nA paragraph\nthat wraps.",
        "# 2026-11-12 (Thu)\n## Other\n### Deeper\n- under deeper",
        "# 2026-11-12 (Thu)\n## Last\n- under last",  # a sibling heading closes the deeper ones
    ]


def test_a_fenced_code_block_is_one_passage_and_its_comments_are_not_headings() -> None:
    chunk = "## Deploy\n- run it:\n```bash\n# not a heading\n\nmake deploy\n```\n- then check\n"
    assert passages(chunk) == [
        "## Deploy\n- run it:",
        "## Deploy\n```bash\n# not a heading\n\nmake deploy\n```",
        "## Deploy\n- then check",
    ]
    # a chunk cut inside a fence keeps the rest as one passage
    assert passages("```\n# a\n- b") == ["```\n# a\n- b"]


def test_passages_of_text_without_structure_or_with_headings_only() -> None:
    assert passages("one line") == ["one line"]
    assert passages("## A\n\n## B\n") == ["## A", "## B"]
    assert passages("") == []
    assert passages("  \n\n") == []


def test_passage_scores_re_measure_only_the_vector_share() -> None:
    channels = [
        {"lexical": 1.0, "vector": 0.2},  # its best line is much closer than the chunk
        {"lexical": 0.5, "vector": 0.6},  # its best line is further than the chunk: kept
        {"lexical": 0.8},  # one channel only: unchanged
        {"lexical": 0.0, "vector": 0.0},  # no fused share: unchanged
    ]
    scores = [0.9 * 1.2, 0.5, 0.7, 0.1]  # the first carries a reranker factor and a user boost
    out = passage_scores(scores, channels, [0.8, 0.3, 0.9, 0.9], 0.7, 0.3)
    assert out[0] == pytest.approx(0.9 * 1.2 * (0.7 + 0.3 * 0.8) / (0.7 + 0.3 * 0.2))
    assert out[1:] == [0.5, 0.7, 0.1]


def test_best_passage_cosine_takes_each_texts_best_passage() -> None:
    def embed(texts: list[str]) -> np.ndarray:
        # the query is "x": a passage's cosine is the share of "x" among its characters
        rows = np.array([[t.count("x"), t.count("y")] for t in texts], dtype=np.float32)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms > 0, norms, 1)

    best = best_passage_cosine(embed, "x", ["- yyy\n- xxy\n- yyx", "- y", "", "- x"])
    assert best.tolist() == pytest.approx([2 / 5**0.5, 0.0, 0.0, 1.0])


def test_documents_of_one_group_share_their_coverage() -> None:
    q = ["alpha", "beta"]
    title, body, other = ["alpha", "x"], ["y", "beta"], ["alpha", "z"]
    alone = overlap_scores(q, [title, body, other], [1.0, 1.0, 1.0], weight=0.3)
    grouped = overlap_scores(q, [title, body, other], [1.0, 1.0, 1.0], weight=0.3, groups=["f", "f", "g"])
    # one file's two chunks hold both terms between them: each is covered as the file is
    assert grouped[0] == pytest.approx(0.7 + 0.3 * (1.0 + 1.0) / 2)
    assert grouped[1] == pytest.approx(grouped[0])
    assert alone[0] == pytest.approx(0.7 + 0.3 * (0.5 + 1.0) / 2)
    assert grouped[2] == pytest.approx(alone[2])  # alone in its group: its own coverage
    # proximity stays each document's own, in both document forms
    spread = ["alpha", *(["z"] * 8), "beta"]
    positions = [term_positions(d) for d in (spread, ["gamma"])]
    got = overlap_scores([*q, "gamma"], positions, [1.0, 1.0], weight=0.3, groups=["f", "f"])
    assert got[0] == pytest.approx(0.7 + 0.3 * (1.0 + 2 / 10) / 2)
    assert got[1] == pytest.approx(0.7 + 0.3 * (1.0 + 1.0) / 2)


def test_a_files_later_regions_are_scored_down_per_region() -> None:
    from goclaw_search.rerank import region_scores

    files = ["a", "a", "b", "a", "a"]
    spans = [(1, 2), (10, 10), (1, 1), (3, 4), (20, 21)]
    scores = [0.9, 0.8, 0.7, 0.6, 0.5]
    # (3, 4) adjoins (1, 2): the first region; (10, 10) the second, (20, 21) the third
    assert region_scores(files, spans, scores, 0.5) == pytest.approx([0.9, 0.4, 0.7, 0.6, 0.125])
    assert region_scores(files, spans, scores, 1.0) == scores
    assert region_scores(files, spans, scores, 0.0) == [0.9, 0.0, 0.7, 0.6, 0.0]


def test_regions_are_found_best_first_whatever_the_input_order() -> None:
    from goclaw_search.rerank import region_scores

    # the same candidates as above, listed worst first
    files = ["a", "a", "b", "a", "a"][::-1]
    spans = [(1, 2), (10, 10), (1, 1), (3, 4), (20, 21)][::-1]
    scores = [0.9, 0.8, 0.7, 0.6, 0.5][::-1]
    assert region_scores(files, spans, scores, 0.5) == pytest.approx([0.125, 0.6, 0.7, 0.4, 0.9])
