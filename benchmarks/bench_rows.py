"""The result row every benchmark suite returns (``run.py`` prints and aggregates them)."""

from __future__ import annotations

from typing import Any


def row(
    name: str,
    value: float,
    unit: str,
    baseline: float | None = None,
    baseline_name: str | None = None,
    *,
    higher_is_better: bool = False,
) -> dict[str, Any]:
    """One measurement; ``ratio`` is how many times better than the baseline goclaw is
    (baseline ÷ value for times, value ÷ baseline with ``higher_is_better``)."""
    ratio = None
    if baseline is not None and value:
        ratio = round(value / baseline if higher_is_better else baseline / value, 2)
    return {
        "name": name,
        "value": round(value, 4),
        "unit": unit,
        "baseline": None if baseline is None else round(baseline, 4),
        "baseline_name": baseline_name,
        "ratio": ratio,
    }
