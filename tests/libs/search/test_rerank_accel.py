"""The C reranker steps (libs/goclaw_search/_rerank.c, issue 11 query speed) give what their numpy
fallbacks give, on random data and on a real memory search, and refuse damaged arrays instead of
reading outside them."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goclaw_search import forward, passage_sketches, rerank
from goclaw_search.index import Doc, SearchIndex
from goclaw_search.passage_sketches import PassageSketch, PassageSketches, sketch_cosines

pytest.importorskip("goclaw_search._rerank")
C = rerank.compiled
assert C is not None, "the C reranker is built but not of this checkout's ABI"


def _python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every caller of the C reranker on its numpy path."""
    monkeypatch.setattr(forward, "compiled", None)
    monkeypatch.setattr(passage_sketches, "compiled", None)


# --------------------------------------------------------------------------- overlap features
def _features(idx: SearchIndex, slots: list[int], wanted: list[str]) -> list[tuple[int, int, dict[str, Any]]]:
    return [(m.matched, m.window, dict(m.items())) for m in idx.positions(slots, wanted)]


def test_overlap_features_equal_the_numpy_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Repeated terms (windows that must slide past a repeat), single-term queries, documents
    without a match or without any term, query terms the index never saw."""
    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(8)]  # few terms: many repeats per document
    docs = {i: [rng.choice(vocab) for _ in range(rng.choice([0, 1, 2, 5, 30, 80]))] for i in range(1, 400)}
    idx = SearchIndex()
    idx.upsert(Doc(i, "", d) for i, d in docs.items())
    cases = []
    for k in range(120):
        size = 1 if k % 4 == 0 else rng.randint(2, 6)
        wanted = rng.sample([*vocab, "unknown", "absent"], size)
        slots = [idx.slot_of[i] for i in rng.sample(sorted(docs), rng.choice([0, 1, 60]))]
        cases.append((slots, wanted))
    fast = [_features(idx, s, w) for s, w in cases]
    _python(monkeypatch)
    slow = [_features(idx, s, w) for s, w in cases]
    assert fast == slow
    assert any(m > 1 and w > m for case in fast for m, w, _d in case)  # windows with gaps were met
    assert any(m == 0 for case in fast for m, _w, _d in case)


def test_the_c_features_are_the_shortest_windows() -> None:
    """Against a brute force over every window, on documents built to need sliding."""
    rng = random.Random(9)
    for _ in range(300):
        n_q = rng.randint(1, 5)
        doc = [rng.randrange(n_q + 3) for _ in range(rng.randint(0, 40))]
        terms = np.asarray(doc, dtype=np.int32)
        ptr = np.asarray([0, len(doc)], dtype=np.int64)
        matched, window = C.overlap_features(
            terms, ptr, np.zeros(1, np.int64), np.arange(n_q, dtype=np.int64)
        )
        present = {t for t in doc if t < n_q}
        best = 0
        if present:
            best = min(
                b - a + 1
                for a in range(len(doc))
                for b in range(a, len(doc))
                if present <= set(doc[a : b + 1])
            )
        assert (matched[0], window[0]) == (len(present), best)


# --------------------------------------------------------------------------- passage sketches
def _random_sketch(rng: random.Random) -> PassageSketch | None:
    if rng.random() < 0.15:
        return None
    n_seg = rng.randint(1, 7)
    seg_len = [rng.randint(1, 9) for _ in range(n_seg)]
    passages = [
        sorted(rng.sample(range(n_seg), rng.randint(1, min(3, n_seg)))) for _ in range(rng.randint(1, 6))
    ]
    return PassageSketch(
        np.asarray([rng.randrange(600) for _ in range(sum(seg_len))], dtype=np.uint16),
        np.asarray(seg_len, dtype=np.uint16),
        np.asarray([r for p in passages for r in p], dtype=np.uint8),
        np.asarray([len(p) for p in passages], dtype=np.uint8),
        np.asarray([rng.uniform(0.2, 3.0) for _ in passages], dtype=np.float32),
    )


def test_sketch_select_and_cosines_equal_the_numpy_path(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(4)
    store = PassageSketches()
    for _ in range(5):  # several appended parts
        store.append([_random_sketch(rng) for _ in range(80)])
    scores_of = np.asarray([rng.uniform(-0.4, 0.6) for _ in range(600)], dtype=np.float32)
    cases = [[rng.randrange(-3, 420) for _ in range(rng.choice([0, 1, 20, 60]))] for _ in range(60)]
    fast = []
    for slots in cases:
        batch = store.select(slots)
        fast.append((batch, sketch_cosines(batch, scores_of[batch.tokens.astype(np.int64)])))
    _python(monkeypatch)
    for slots, (batch, best) in zip(cases, fast, strict=True):
        want = store.select(slots)
        for got_a, want_a in zip(batch, want, strict=True):
            assert np.array_equal(got_a, want_a)
        want_best = sketch_cosines(want, scores_of[want.tokens.astype(np.int64)])
        assert best.dtype == want_best.dtype == np.float32
        np.testing.assert_allclose(best, want_best, rtol=0, atol=1e-6)
    assert any(b.any() for _bt, b in fast)


def test_sketch_scores_in_one_call_equal_the_three_steps() -> None:
    """sketch_scores gives what select, token_dots and sketch_best give one after the other:
    the same bits (and 0 / no sketch for a slot without one)."""
    rng = random.Random(6)
    store = PassageSketches()
    store.append([_random_sketch(rng) for _ in range(300)])
    gen = np.random.default_rng(6)
    matrix = gen.standard_normal((600, 40)).astype(np.float32)
    q = gen.standard_normal(40).astype(np.float32)
    q /= np.float32(np.linalg.norm(q))
    for _ in range(50):
        slots = [rng.randrange(-2, 310) for _ in range(rng.choice([0, 1, 20, 60]))]
        found = store.best_cosines(slots, matrix, q)
        assert found is not None
        batch = store.select(slots)
        scores = np.frombuffer(C.token_dots(matrix, q, batch.tokens), dtype=np.float32)
        assert np.array_equal(found[0], sketch_cosines(batch, scores))
        assert np.array_equal(found[1], batch.has)


def test_token_dots_equal_the_numpy_gather() -> None:
    rng = np.random.default_rng(2)
    matrix = rng.standard_normal((700, 37)).astype(np.float32)  # a dim that is not a multiple of 8
    q = rng.standard_normal(37).astype(np.float32)
    for ids in (rng.integers(0, 700, 500).astype(np.uint16), rng.integers(0, 700, 50), np.zeros(0, np.int64)):
        got = np.frombuffer(C.token_dots(matrix, q, ids), dtype=np.float32)
        np.testing.assert_allclose(got, matrix[ids.astype(np.int64)] @ q, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- damaged arrays
BAD_CASES = {
    "ptr beyond the terms": "R.overlap_features(i32([1, 2]), i64([0, 50]), i64([0]), i64([1]))",
    "decreasing ptr": "R.overlap_features(i32([1, 2]), i64([2, 0]), i64([0]), i64([1]))",
    "negative ptr": "R.overlap_features(i32([1, 2]), i64([-4, 1]), i64([0]), i64([1]))",
    "slot beyond": "R.overlap_features(i32([1, 2]), i64([0, 2]), i64([1]), i64([1]))",
    "negative slot": "R.overlap_features(i32([1, 2]), i64([0, 2]), i64([-1]), i64([1]))",
    "repeated query ids": "R.overlap_features(i32([1, 2]), i64([0, 2]), i64([0]), i64([1, 1]))",
    "int64 terms": "R.overlap_features(i64([1, 2]), i64([0, 2]), i64([0]), i64([1]))",
    "float slots": "R.overlap_features(i32([1, 2]), i64([0, 2]), np.zeros(1), i64([1]))",
    "select: layout beyond": "R.sketch_select(u16([1]), u16([1, 0, 1, 0, 0]), u16([1, 1, 1]), "
    "np.ones(1, bool), i64([0, 0, 1, 99]), i64([0]))",
    "select: ref beyond the segments": "R.sketch_select(u16([1]), u16([1, 7, 1, 0, 0]), u16([1, 1, 1]), "
    "np.ones(1, bool), i64([0, 0, 1, 5]), i64([0]))",
    "select: token count off": "R.sketch_select(u16([1]), u16([9, 0, 1, 0, 0]), u16([1, 1, 1]), "
    "np.ones(1, bool), i64([0, 0, 1, 5]), i64([0]))",
    "select: counts and ptr disagree": "R.sketch_select(u16([1]), u16([1, 0, 1, 0, 0]), u16([1, 1]), "
    "np.ones(1, bool), i64([0, 0, 1, 5]), i64([0]))",
    "best: ref beyond": "R.sketch_best(u16([1]), i64([3]), u16([1]), f32([1]), i64([1]), f32([0.5]))",
    "best: passages do not add up": "R.sketch_best(u16([1]), i64([0]), u16([1]), f32([1]), i64([4]), "
    "f32([0.5]))",
    "best: scores short": "R.sketch_best(u16([3]), i64([0]), u16([1]), f32([1]), i64([1]), f32([0.5]))",
    "best: nref off": "R.sketch_best(u16([1]), i64([0]), u16([9]), f32([1]), i64([1]), f32([0.5]))",
    "dots: id beyond": "R.token_dots(np.ones((4, 3), np.float32), f32([1, 1, 1]), i64([4]))",
    "dots: negative id": "R.token_dots(np.ones((4, 3), np.float32), f32([1, 1, 1]), i64([-1]))",
    "dots: ragged matrix": "R.token_dots(np.ones(10, np.float32), f32([1, 1, 1]), i64([0]))",
    "dots: int32 ids": "R.token_dots(np.ones((4, 3), np.float32), f32([1, 1, 1]), i32([0]))",
    "scores: token beyond the rows": "R.sketch_scores(u16([7]), u16([1, 0, 1, 0, 0]), u16([1, 1, 1]), "
    "np.ones(1, bool), i64([0, 0, 1, 5]), i64([0]), np.ones((4, 3), np.float32), f32([1, 1, 1]))",
    "scores: damaged layout": "R.sketch_scores(u16([1]), u16([1, 5, 1, 0, 0]), u16([1, 1, 1]), "
    "np.ones(1, bool), i64([0, 0, 1, 5]), i64([0]), np.ones((4, 3), np.float32), f32([1, 1, 1]))",
    "scores: ragged matrix": "R.sketch_scores(u16([1]), u16([1, 0, 1, 0, 0]), u16([1, 1, 1]), "
    "np.ones(1, bool), i64([0, 0, 1, 5]), i64([0]), np.ones(10, np.float32), f32([1, 1, 1]))",
    "scores: ptr beyond": "R.sketch_scores(u16([1]), u16([1, 0, 1, 0, 0]), u16([1, 1, 1]), "
    "np.ones(1, bool), i64([0, 0, 9, 5]), i64([0]), np.ones((4, 3), np.float32), f32([1, 1, 1]))",
}


def test_damaged_arrays_are_refused_not_read() -> None:
    """Each call runs in one child process: a crash fails the test instead of the test run."""
    script = textwrap.dedent(
        """
        import numpy as np
        from goclaw_search import _rerank as R
        i32 = lambda v: np.asarray(v, np.int32)
        i64 = lambda v: np.asarray(v, np.int64)
        u16 = lambda v: np.asarray(v, np.uint16)
        f32 = lambda v: np.asarray(v, np.float32)
        for name, call in CASES.items():
            try:
                eval(call)
            except (ValueError, IndexError) as exc:
                print("refused", name, "|", exc)
            else:
                print("ACCEPTED", name)
        """
    )
    code = f"CASES = {BAD_CASES!r}\n{script}"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-800:]
    refused = {
        line.split(" | ")[0][len("refused ") :]
        for line in done.stdout.splitlines()
        if line.startswith("refused")
    }
    assert refused == set(BAD_CASES), done.stdout


def test_a_damaged_sketch_in_the_store_raises_from_select() -> None:
    """A store whose layout words were damaged (a file on disk) raises from select(), which the
    passage step turns into a warning (goclaw_memory.postprocess.overlap_rerank)."""
    rng = random.Random(1)
    sketch = None
    while sketch is None:
        sketch = _random_sketch(rng)
    store = PassageSketches()
    store.append([sketch])
    store._join()
    store.layout = store.layout.copy()
    store.layout[0] = 999  # the first segment's length no longer matches its tokens
    with pytest.raises(ValueError, match="damaged sketch"):
        store.select([0])


def test_the_build_hook_builds_the_reranker(tmp_path: Path) -> None:
    """hatch_build.py builds _rerank.c as its own module, of this checkout's ABI."""
    import importlib.machinery
    import importlib.util
    import shutil
    import sysconfig

    root = Path(__file__).resolve().parents[3]
    spec = importlib.util.spec_from_file_location("goclaw_hatch_build", root / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    assert "libs/goclaw_search/_rerank.c" in hook.SOURCES
    if not shutil.which(str(sysconfig.get_config_var("CC") or "cc").split()[0]):
        pytest.skip("no C compiler")
    target = tmp_path / ("_rerank" + str(sysconfig.get_config_var("EXT_SUFFIX")))
    assert hook._compile(root / "libs/goclaw_search/_rerank.c", target)
    loader = importlib.machinery.ExtensionFileLoader("goclaw_search._rerank", str(target))
    found = importlib.util.spec_from_file_location("goclaw_search._rerank", target, loader=loader)
    assert found is not None
    module = importlib.util.module_from_spec(found)
    loader.exec_module(module)
    assert rerank._usable(module)


# --------------------------------------------------------------------------- a real search
def test_memory_search_results_equal_the_numpy_path(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The quick-start memory indexed for real, its labelled questions searched with the
    default reranker: the same hits in the same order, scores within 1e-6, with the C steps
    and with every one of them on its numpy path (the code before them)."""
    import shutil

    from goclaw.engine import Engine
    from goclaw_embeddings import static_passages
    from goclaw_memory.evaluation import load_questions

    example = Path(__file__).resolve().parents[3] / "examples" / "quickstart"
    shutil.copytree(example / "agents" / "support", workspace / "agents" / "support")
    questions = [q for q in load_questions(example / "eval" / "questions.jsonl") if q.agent == "support"]

    def run(engine: Any) -> list[list[tuple[str, int, int, float]]]:
        return [
            [
                (h.path, h.start_line, h.end_line, h.score)
                for h in engine.memory.search(q.question, "support", q.user)
            ]
            for q in questions
        ]

    calls: dict[str, int] = {}
    for name in ("overlap_features", "sketch_scores"):
        real = getattr(C, name)
        monkeypatch.setattr(
            C, name, lambda *a, _r=real, _n=name: calls.update({_n: calls.get(_n, 0) + 1}) or _r(*a)
        )
    with Engine.open(workspace) as engine:
        engine.agents.create("support")
        engine.memory.index("support")
        fast = run(engine)
        assert min(calls.values()) > 100 and len(calls) == 2, calls  # both steps ran in C
        _python(monkeypatch)
        monkeypatch.setattr(static_passages, "rerank_c", None)
        slow = run(engine)
    assert len(questions) > 100
    assert [[h[:3] for h in r] for r in fast] == [[h[:3] for h in r] for r in slow]
    worst = max(abs(a[3] - b[3]) for x, y in zip(fast, slow, strict=True) for a, b in zip(x, y, strict=True))
    assert worst < 1e-6
