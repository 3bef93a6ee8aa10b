"""Weighted fusion's per-query weights (goclaw_search.fusion.query_weights) and the rescoring
that applies them to fused scores (reweighted), on small hand-made cases."""

from __future__ import annotations

import pytest

from goclaw_search.fusion import GAP_OF, query_weights, reweighted


def _crowd(best: float, median: float) -> list[float]:
    """GAP_OF cosines: one ``best``, the others at ``median`` (so the median of all is it)."""
    return [median] * (GAP_OF - 1) + [best]


def test_the_vector_weight_follows_the_gap_of_the_best_cosine() -> None:
    tw, vw = query_weights(_crowd(0.60, 0.40), 0.7, 0.3, 3.0, 0.06)  # gap 0.20
    assert vw == pytest.approx(0.3 + 3.0 * (0.20 - 0.06))
    assert tw + vw == pytest.approx(1.0)  # the sum is kept
    # candidates all alike in meaning: full text takes more than its set weight
    tw, vw = query_weights(_crowd(0.41, 0.40), 0.7, 0.3, 3.0, 0.06)
    assert vw == pytest.approx(0.3 + 3.0 * (0.01 - 0.06)) and vw < 0.3
    # a gap of exactly ``ref`` leaves the weights as set
    assert query_weights(_crowd(0.5, 0.44), 0.7, 0.3, 3.0, 0.06) == pytest.approx((0.7, 0.3))


def test_the_median_is_of_the_best_cosines_only() -> None:
    tail = [0.0] * 100  # far below: would pull a median of all of them down to 0
    got = query_weights(_crowd(0.9, 0.5) + tail, 0.7, 0.3, 1.0, 0.0)
    assert got == pytest.approx((0.3, 0.7))  # gap 0.4


def test_the_weights_stay_within_zero_and_their_sum() -> None:
    assert query_weights(_crowd(1.0, 0.0), 0.6, 0.4, 10.0, 0.0) == (0.0, 1.0)
    assert query_weights(_crowd(0.3, 0.3), 0.6, 0.4, 10.0, 0.5) == (1.0, 0.0)


@pytest.mark.parametrize(
    ("cosines", "slope"), [(_crowd(0.9, 0.1), 0.0), (_crowd(0.9, 0.1)[1:], 3.0), ([], 3.0)]
)
def test_off_or_too_few_candidates_keeps_the_weights(cosines: list[float], slope: float) -> None:
    assert query_weights(cosines, 0.7, 0.3, slope, 0.06) == (0.7, 0.3)


def test_rescoring_keeps_a_boost_and_the_scores_it_cannot_redo() -> None:
    old, new = (0.7, 0.3), (0.5, 0.5)
    boosted = 1.2 * (0.7 * 1.0 + 0.3 * 0.2)  # a user's own memory: ×1.2
    got = reweighted([boosted, 0.42, 0.9, 0.0], [1.0, None, 0.5, 0.0], [0.2, 0.9, None, 0.0], old, new)
    assert got[0] == pytest.approx(1.2 * (0.5 * 1.0 + 0.5 * 0.2))
    assert got[1:] == [0.42, 0.9, 0.0]  # a channel missing, a fused sum of 0
