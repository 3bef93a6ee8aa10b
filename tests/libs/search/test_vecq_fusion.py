"""SearchIndex.fuse (the int8 scan, bounds, exact rescoring: libs/goclaw_search/fusion.py
``fuse_bounded``) returns exactly what fusing every slot's exact cosine returns: the same slots,
order and scores, on random indexes with near-ties, duplicate rows, rows without a vector, scope
masks, boosts, after removals and compaction, after save / load, and from a format 3 or 4 index."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goclaw_search import vecq
from goclaw_search.fusion import METHODS, Fused, fuse_lists
from goclaw_search.index import FORMAT, Doc, SearchIndex
from tests.libs.search.clustered import WORDS, _index, _query, _same, _two_pass

SCANS = ("int8", "blas", "dense")


def _check(idx: SearchIndex, rng: np.random.Generator, rounds: int) -> list[int]:
    """Random searches on ``idx``: every scan path equals the dense exact fusion; the dense BLAS
    fusion agrees to 1e-6 (its cosines' last bits depend on the BLAS). Returns the rescored
    counts of the int8 path."""
    rescored = []
    for _ in range(rounds):
        unit = idx.unit_query(_query(rng, idx))
        terms = list(rng.choice(WORDS, size=int(rng.integers(0, 4))))
        lexical = idx.bm25(terms) if rng.random() < 0.8 else None
        scopes = [None, [""], ["u1"], ["", "u2"], ["u1", "u2", ""]][int(rng.integers(0, 5))]
        mask = idx.scope_filter(scopes)
        boost = None
        if rng.random() < 0.5:
            boost = np.where(idx.scope[: idx.n] == idx.scopes.get("u1", -1), 1.2, 1.0).astype(np.float32)
        method = str(rng.choice(METHODS, p=[0.55, 0.15, 0.15, 0.15]))
        args: dict[str, Any] = dict(limit=int(rng.integers(1, 30)), method=method, boost=boost)
        want = fuse_lists(lexical, None if unit is None else vecq.exact(idx.vec[: idx.n], unit), mask, **args)
        for scan in SCANS:
            _same(idx.fuse(lexical, unit, mask, scan=scan, **args), want)
            if scan == "int8":
                rescored.append(idx.rescored)
                _same(_two_pass(idx, lexical, unit, mask, **args), want)
                assert idx.rescored == rescored[-1]  # the one-pass scan finds the same slots
        if args["method"] != "weighted":  # ranks: a near-tie's swap moves the rank-based scores
            continue
        blas = fuse_lists(lexical, idx.cosine(unit) if unit is not None else None, mask, **args)
        assert len(blas.slots) == len(want.slots)
        np.testing.assert_allclose(blas.scores, want.scores, rtol=0, atol=1e-6)
        ws = want.scores
        for i, (got, ref) in enumerate(zip(blas.slots, want.slots, strict=True)):
            if got != ref:  # only a near-tie (or one at the cut) may swap
                assert i == len(ws) - 1 or any(abs(ws[i] - w) < 2e-6 for j, w in enumerate(ws) if j != i)
    return rescored


@pytest.mark.parametrize("d", [7, 32, 100, 384])
def test_int8_fusion_is_exact_on_random_indexes(d: int) -> None:
    for seed in range(4):
        rng = np.random.default_rng(seed * 7919 + d)
        idx = _index(rng, int(rng.integers(50, 700)), d)
        rescored = _check(idx, rng, 25)
        assert min(rescored) < idx.n  # the bounds do cut


def test_int8_fusion_is_exact_after_removals_compaction_and_replacements() -> None:
    rng = np.random.default_rng(5)
    idx = _index(rng, 1500, 48)
    idx.remove(range(1, 400, 3))  # dead slots, not compacted yet
    assert idx.n_alive < idx.n
    _check(idx, rng, 20)
    idx.remove(range(2, 1200, 2))  # compacts
    assert idx.n_alive == idx.n
    _check(idx, rng, 20)
    idx.upsert([Doc(5, "u1", ["w1", "w2"], rng.standard_normal(48)), Doc(7, "", ["w3"], None)])
    idx.set_vectors([(9, rng.standard_normal(48)), (11, None)])
    _check(idx, rng, 20)
    # every int8 row is the quantization of its float32 row
    q8, s, *_ = vecq.quantize_numpy(idx.vec[: idx.n], idx.q8mu)
    assert np.array_equal(idx.q8[: idx.n], q8) and np.array_equal(idx.q8s[: idx.n], s)


def test_int8_fusion_is_exact_after_save_load_and_from_older_formats(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    idx = _index(rng, 800, 100)
    idx.remove(range(1, 100, 4))
    idx.save(tmp_path / "now")
    loaded = SearchIndex.load(tmp_path / "now")
    assert isinstance(loaded.q8.base, np.memmap)  # mapped, not recomputed
    assert np.array_equal(loaded.q8, idx.q8[: idx.n]) and np.array_equal(loaded.q8e, idx.q8e[: idx.n])
    assert np.array_equal(loaded.q8mu, idx.q8mu)
    _check(loaded, rng, 20)
    # Format 3 (no int8 copy) and 4 (an int8 copy without a centre): quantized on load, about the
    # mean of every row, searched the same, saved as the current format.
    for fmt, gone in ((3, ("q8", "q8s", "q8e", "q8n", "q8mu")), (4, ("q8n", "q8mu"))):
        old = tmp_path / f"v{fmt}"
        shutil.copytree(tmp_path / "now", old)
        for name in gone:
            (old / f"{name}.npy").unlink()
        meta = json.loads((old / "meta.json").read_text())
        (old / "meta.json").write_text(json.dumps({**meta, "format": fmt}))
        back = SearchIndex.load(old)
        live = back.has_vec[: back.n]
        np.testing.assert_allclose(back.q8mu, back.vec[live].mean(axis=0), atol=1e-6)
        q8, s, *_ = vecq.quantize_numpy(back.vec, back.q8mu)
        assert np.array_equal(back.q8, q8) and np.array_equal(back.q8s, s)
        _check(back, rng, 20)
        back.upsert([Doc(10_000, "u1", ["w5"], rng.standard_normal(100))])
        back.save(old)
        assert json.loads((old / "meta.json").read_text())["format"] == FORMAT
        _check(SearchIndex.load(old), rng, 10)


def test_the_vector_channel_decision_is_exact_near_zero() -> None:
    """Whether any cosine in scope is positive decides the weights: cosines far inside the int8
    bounds (1e-5) must be settled exactly, both ways."""
    d = 64
    idx = SearchIndex(d)
    q = np.zeros(d)
    q[0] = 1.0
    rows = []
    for i in range(300):
        v = np.zeros(d)
        v[1 + i % 60] = 1.0
        rows.append(Doc(i + 1, "", ["w1"] if i % 7 == 0 else ["w2"], v))
    idx.upsert(rows)
    unit = idx.unit_query(q)
    lexical = idx.bm25(["w1"])
    for tiny in (1e-5, -1e-5, 0.0):
        idx.set_vectors([(42, np.eye(d)[5] + tiny * np.eye(d)[0])])
        for lex in (None, lexical):
            want = fuse_lists(lex, vecq.exact(idx.vec[: idx.n], unit), None, limit=5)
            got = idx.fuse(lex, unit, None, limit=5, scan="int8")
            _same(got, want)
            if lex is None:
                assert got.slots == ([idx.slot_of[42]] if tiny > 0 else [])


def test_memory_search_fuses_with_the_int8_scan_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The memory service's search (SQLite backend) fuses through SearchIndex.fuse, on the int8
    path (above DENSE_BELOW slots: lowered here), and gets what the dense exact fusion gets."""
    from goclaw.engine import Engine
    from goclaw_search import index as index_module

    monkeypatch.setattr(index_module, "DENSE_BELOW", 64)
    calls: list[tuple[SearchIndex, tuple[Any, ...], dict[str, Any], Fused]] = []
    real = SearchIndex.fuse

    def spy(self: SearchIndex, *args: Any, **kwargs: Any) -> Fused:
        out = real(self, *args, **kwargs)
        calls.append((self, args, kwargs, out))
        return out

    monkeypatch.setattr(SearchIndex, "fuse", spy)
    eng = Engine.open(tmp_path / "ws", None)
    try:
        eng.agents.create("ada")
        root = Path(eng.agent_dir(eng.agents.get("ada")))
        (root / "memory").mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(3)
        topics = ["ferry harbour schedule", "tomato garden watering", "bicycle key garage", "green tea"]
        for f in range(12):
            lines = [
                f"Note {f}-{i}: the {topics[(f + i) % 4]} entry {i} mentions {rng.choice(WORDS)}.\n\n"
                for i in range(120)
            ]
            (root / "memory" / f"notes-{f}.md").write_text("".join(lines))
        eng.memory.index("ada")
        for question in ("when does the ferry leave the harbour", "watering tomato plants", "w3 w7"):
            for channel in ("hybrid", "vector"):
                calls.clear()
                assert eng.memory.search(question, "ada", limit=10, channel=channel)
                (idx, (lexical, unit, mask), kwargs, got), *_ = calls
                assert idx.n >= 64 and unit is not None and 0 < idx.rescored < idx.n
                want = fuse_lists(lexical, vecq.exact(idx.vec[: idx.n], unit), mask, **kwargs)
                _same(got, want)
    finally:
        eng.close()


def test_rows_without_a_vector_are_never_rescored() -> None:
    """A row without a vector has the exact bounds [0, 0]: deciding that no cosine in scope is
    positive reads only the rows that have one."""
    d = 32
    idx = SearchIndex(d)
    q = np.zeros(d)
    q[0] = 1.0
    docs = [Doc(i + 1, "", ["w1"], None) for i in range(990)]
    docs += [Doc(2000 + i, "", ["w2"], np.eye(d)[1 + i] - 1e-3 * q) for i in range(10)]  # cosine -0.001
    idx.upsert(docs)
    unit = idx.unit_query(q)
    got = idx.fuse(None, unit, None, limit=10, scan="int8")
    assert got.slots == [] and idx.rescored == 10
    _same(got, fuse_lists(None, vecq.exact(idx.vec[: idx.n], unit), None, limit=10))
    lexical = idx.bm25(["w1"])
    _same(
        idx.fuse(lexical, unit, None, limit=10, scan="int8"),
        fuse_lists(lexical, vecq.exact(idx.vec[: idx.n], unit), None, limit=10),
    )
