"""Entity-name similarity for KG dedup: Jaro-Winkler over compact and word-sorted
forms of the names (:func:`goclaw_text.entities.normalize_name`)."""

from __future__ import annotations

from goclaw_text.entities import normalize_name


def _compact(name: str) -> str:
    return normalize_name(name).replace(" ", "").replace("_", "")


def jaro_winkler(a: str, b: str, prefix_scale: float = 0.1) -> float:
    """Standard Jaro-Winkler similarity in 0..1 over code points (prefix up to 4, boosted only
    above Jaro 0.7), from rapidfuzz: compiled code, since dedup compares many pairs."""
    from rapidfuzz.distance import JaroWinkler

    return float(JaroWinkler.similarity(a, b, prefix_weight=prefix_scale))


def name_similarity(a: str, b: str) -> float:
    """Similarity of two entity names: Jaro-Winkler of the compact forms (case, accents,
    spaces and punctuation ignored), or of the word-sorted forms when higher, so
    "Open AI"/"OpenAI" and "Atlas Project"/"Project Atlas" score 1.0."""
    direct = jaro_winkler(_compact(a), _compact(b))
    sorted_a = "".join(sorted(normalize_name(a).split()))
    sorted_b = "".join(sorted(normalize_name(b).split()))
    return max(direct, jaro_winkler(sorted_a, sorted_b))
