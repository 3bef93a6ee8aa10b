"""Jaro-Winkler is the standard one, from rapidfuzz: textbook values, no prefix boost below the
0.7 Jaro threshold, and agreement with rapidfuzz's JaroWinkler on random pairs."""

from __future__ import annotations

import random

import pytest

from goclaw_kg.similarity import jaro_winkler, name_similarity

# Textbook values (Winkler 1990 and the usual worked examples), to 3 decimals.
REFERENCE = [
    ("MARTHA", "MARHTA", 0.961),
    ("DWAYNE", "DUANE", 0.840),
    ("DIXON", "DICKSONX", 0.813),
    ("JELLYFISH", "SMELLYFISH", 0.896),
    ("CRATE", "TRACE", 0.733),
    ("abcz", "abyq", 0.667),  # Jaro 0.667 < 0.7: no prefix boost (with one: 0.733)
    ("", "", 1.0),
    ("a", "", 0.0),
]


@pytest.mark.parametrize(("a", "b", "expected"), REFERENCE)
def test_reference_values(a: str, b: str, expected: float) -> None:
    assert jaro_winkler(a, b) == pytest.approx(expected, abs=5e-4)
    assert jaro_winkler(b, a) == pytest.approx(expected, abs=5e-4)


def test_agrees_with_rapidfuzz_on_random_pairs() -> None:
    from rapidfuzz.distance import JaroWinkler

    rng = random.Random(7)

    def word() -> str:
        return "".join(rng.choice("abcdeé") for _ in range(rng.randint(0, 12)))

    pairs = [(word(), word()) for _ in range(5000)]
    differ = [(a, b) for a, b in pairs if abs(jaro_winkler(a, b) - JaroWinkler.similarity(a, b)) > 1e-9]
    assert differ == []


def test_name_similarity_matches_variants_and_separates_other_names() -> None:
    assert name_similarity("Open AI", "OpenAI") == 1.0
    assert name_similarity("Atlas Project", "Project Atlas") == 1.0
    assert name_similarity("Postgres", "PostgreSQL") > 0.9
    assert name_similarity("Berlin", "Munich") < 0.6
