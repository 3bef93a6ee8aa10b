"""A large upsert sets its vectors (copy, normalise, int8 copy) on a second thread while the
postings are built, when the machine is otherwise idle (libs/goclaw_search/index.py ``_Side``):
the same index, byte for byte, as one thread builds; a failure there is the caller's."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from goclaw_search import index as index_mod
from goclaw_search.index import Doc, SearchIndex


def _docs(n: int) -> list[Doc]:
    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(3_000)]
    out = []
    for i in range(n):
        terms = [words[j] for j in rng.integers(0, len(words), size=int(rng.integers(1, 30)))]
        vec = None if i % 17 == 0 else rng.standard_normal(32).astype(np.float32)
        out.append(Doc(i, "" if i % 3 else "u1", terms, vec, i, None, f"p{i % 50}.md", i, i + 1))
    return out


def _built(monkeypatch: pytest.MonkeyPatch, idle: bool, path: Path) -> dict[str, bytes]:
    monkeypatch.setattr(index_mod, "SIDE_AT", 1_000)
    monkeypatch.setattr(index_mod, "_machine_idle", lambda: idle)
    names: list[str] = []
    real = SearchIndex._set_vectors

    def spy(self: SearchIndex, *a: object) -> None:
        names.append(threading.current_thread().name)
        real(self, *a)

    monkeypatch.setattr(SearchIndex, "_set_vectors", spy)
    idx = SearchIndex(32)
    docs = _docs(4_000)
    idx.upsert(docs[:2_500])
    idx.upsert(docs[2_000:])  # replaced documents, new ones
    assert names == (["goclaw-index-vectors"] * 2 if idle else ["MainThread"] * 2)
    idx.save(path)
    return {f.name: f.read_bytes() for f in sorted(path.iterdir())}


def test_vectors_set_beside_the_postings_give_the_same_index(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    side = _built(monkeypatch, True, tmp_path / "side")
    alone = _built(monkeypatch, False, tmp_path / "alone")
    assert side == alone and len(side) > 10


def test_a_failure_setting_the_vectors_is_raised_by_upsert(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_mod, "SIDE_AT", 100)
    monkeypatch.setattr(index_mod, "_machine_idle", lambda: True)

    def broken(self: SearchIndex, lo: int, hi: int) -> None:
        raise MemoryError("no room for the int8 rows")

    monkeypatch.setattr(SearchIndex, "_quantize", broken)
    with pytest.raises(MemoryError, match="int8 rows"):
        SearchIndex(32).upsert(_docs(500))
    assert not [t for t in threading.enumerate() if t.name == "goclaw-index-vectors"]
