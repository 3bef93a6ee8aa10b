#!/usr/bin/env python3
"""Benchmark skill search and the Skills prompt section.

    python benchmarks/skills_bench.py [--quick]

Rows (medians over every query of several rounds, this machine, one process):

* ``bm25 search N skills``: one query (tokenise, score every skill, top 5) on a skill view's
  search index (the shared retrieval engine's ``SearchIndex`` + ``fuse``), against
  the baseline ``rank_bm25`` on the same corpus and queries in the same run. Both get the
  same tokens (the shared tokenizer's terms of name + description; the query's distinct
  terms), and the baseline is ``rank_bm25.BM25Okapi`` with its IDF replaced by goclaw's
  ``ln((N-df+0.5)/(df+0.5)+1)`` and ``k1 = 1.2`` so both compute the same scores; the
  ``agreement`` row is the share of queries whose top 5 are identical (float32 against
  float64 scores can swap near-ties). Index build time is reported separately.
  Target: under 1 ms per query at 10,000 skills. (On the shared engine a query has a fixed cost
  of a few dozen microseconds of numpy calls, and the baseline gets pre-stemmed tokens.)
* ``engine search 1000 skills``: ``engine.skills.search`` end to end (caller view, database
  fingerprint check, BM25, fusion) with embeddings off.
* ``skills section 500 skills (warm)``: rendering the Skills prompt section for an agent
  with 500 skills once the loader cache is warm; baseline: the same render right after a
  version bump (the tiers re-read from disk, as GoClaw's uncached loader does every turn).
* ``prompt build 500 skills (warm)``: ``engine.prompt.build`` when the prompt builder exists.
* ``hot reload latency``: a SKILL.md edit until the next build shows it (debounce 500 ms).

Corpus: synthetic skills (name of 2 words, description of 12-30 words drawn from a Zipf
distribution over 3,000 words); queries of 1-3 words from the 300 most common words.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_rows import row as _row

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "plugins")]


def _vocab(n: int, rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 9))))
    return sorted(words)


def corpus(n: int, seed: int = 7) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    vocab = _vocab(3000, rng)
    weights = [1 / (i + 1) for i in range(len(vocab))]
    out = []
    for i in range(n):
        name = " ".join(rng.choices(vocab, weights, k=2))
        desc = " ".join(rng.choices(vocab, weights, k=rng.randint(12, 30))) + "."
        out.append((f"skill-{i:05d}", name, desc))
    return out


def queries(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    vocab = _vocab(3000, random.Random(7))[:300]
    return [" ".join(rng.sample(vocab, rng.randint(1, 3))) for _ in range(count)]


def _goclaw_idf_bm25(tokenized: list[list[str]]) -> Any:
    from rank_bm25 import BM25Okapi

    class GoclawIdfBM25(BM25Okapi):  # type: ignore[misc]
        def _calc_idf(self, nd: dict[str, int]) -> None:
            for word, freq in nd.items():
                self.idf[word] = math.log((self.corpus_size - freq + 0.5) / (freq + 0.5) + 1)

    return GoclawIdfBM25(tokenized, k1=1.2, b=0.75)


def _per_query(fn: Any, qs: list[str], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        for q in qs:
            t0 = time.perf_counter_ns()
            fn(q)
            times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1e6


def _view(items: list[tuple[str, str, str]]) -> Any:
    from goclaw_skills.loader import ResolvedSkill, SkillView
    from goclaw_skills.parsing import SkillRecord

    return SkillView(
        [ResolvedSkill(SkillRecord(s, n, d, "", f"/{s}/SKILL.md", f"/{s}")) for s, n, d in items]
    )


def bench_bm25(n: int, qs: list[str], rounds: int) -> list[dict[str, Any]]:
    import numpy as np

    from goclaw_search.fusion import fuse
    from goclaw_search.tokenize import query_terms, terms

    items = corpus(n)
    terms("warm up the stemmer")  # imports and the stemmer's start-up are not the build
    t0 = time.perf_counter()
    view = _view(items)
    index = view.search_index()
    build_ms = (time.perf_counter() - t0) * 1000
    baseline = _goclaw_idf_bm25([terms(f"{name} {desc}") for _slug, name, desc in items])

    def ours(q: str) -> list[int]:
        return [s.slot for s in fuse(index.bm25(query_terms(q)), None, None, limit=5)]

    def theirs(q: str) -> list[int]:
        scores = baseline.get_scores(query_terms(q))
        top = np.argsort(-scores, kind="stable")[:5]
        return [int(i) for i in top if scores[i] > 0]

    agree = sum(1 for q in qs if ours(q) == theirs(q)) / len(qs)
    ours_ms = _per_query(ours, qs, rounds)
    base_ms = _per_query(theirs, qs, max(1, rounds // 3) if n >= 10_000 else rounds)
    return [
        {
            "name": f"bm25 search {n} skills",
            "value": ours_ms,
            "unit": "ms/query",
            "baseline": base_ms,
            "baseline_name": "rank_bm25 (same formula, same tokens)",
            "ratio": base_ms / ours_ms,
        },
        {
            "name": f"top-5 agreement with rank_bm25, {n} skills",
            "value": agree * 100,
            "unit": "%",
            "baseline": None,
            "baseline_name": None,
            "ratio": None,
        },
        _row(f"index build {n} skills (tokenise + postings)", build_ms, "ms"),
    ]


def _write_skills(root: Path, items: list[tuple[str, str, str]]) -> None:
    for slug, name, desc in items:
        d = root / slug
        d.mkdir(parents=True, exist_ok=True)
        (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {desc}\n---\nBody of {slug}.\n")


def bench_engine(quick: bool) -> list[dict[str, Any]]:
    from goclaw.contracts.hooks import PromptRequest
    from goclaw.contracts.host import PromptContext
    from goclaw.engine import Engine
    from goclaw_prompt import hookspecs as prompt_hooks

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HOME"] = str(Path(tmp) / "home")
        ws = Path(tmp) / "ws"
        _write_skills(ws / "skills", corpus(1000)[:500])
        plugins = {
            "disable": ["goclaw.skills.tier.builtin"],
            "embeddings": {"provider": "none"},
            "skills": {"watch": True},
        }
        eng = Engine.open(ws, plugins=plugins)
        try:
            eng.agents.create("bench")
            agent = eng.agents.get("bench")
            [section] = [s for s in prompt_hooks.sections(eng) if s.name == "skills"]

            def render() -> None:
                ctx = PromptContext(eng, PromptRequest(agent="bench"), agent, "", "full")
                section.render(ctx)

            def render_cold() -> None:
                eng.skills.reload()
                render()

            render()
            n = 20 if quick else 100
            warm = statistics.median(_timed(render) for _ in range(n))
            cold = statistics.median(_timed(render_cold) for _ in range(max(3, n // 10)))
            rows.append(
                _row("skills section 500 skills (warm)", warm, "ms", cold, "re-read tiers every build")
            )
            try:
                eng.prompt.build(PromptRequest(agent="bench"))
                build = statistics.median(
                    _timed(lambda: eng.prompt.build(PromptRequest(agent="bench"))) for _ in range(n)
                )
                rows.append(_row("prompt build 500 skills (warm)", build, "ms"))
            except Exception as exc:  # the prompt builder may be disabled
                print(f"(prompt build not measured: {exc})", file=sys.stderr)

            # Hot reload: edit a SKILL.md, poll builds until the change shows.
            lat = []
            target = ws / "skills" / "skill-00001" / "SKILL.md"
            for i in range(2 if quick else 5):
                time.sleep(0.3)
                marker = f"edited-{i}"
                target.write_text(f"---\nname: x\ndescription: {marker}\n---\nbody\n")
                t0 = time.perf_counter()
                while marker not in {s.record.description for s in eng.skills.list("bench")}:
                    time.sleep(0.005)
                    if time.perf_counter() - t0 > 5:
                        break
                lat.append(time.perf_counter() - t0)
            rows.append(_row("hot reload latency (edit to next build)", statistics.median(lat) * 1000, "ms"))
        finally:
            eng.close()

        ws2 = Path(tmp) / "ws2"
        _write_skills(ws2 / "skills", corpus(1000))
        eng = Engine.open(ws2, plugins={**plugins, "skills": {"watch": False}})
        try:
            qs = queries(100)
            eng.skills.search(qs[0])
            ms = _per_query(eng.skills.search, qs, 3)
            rows.append(_row("engine search 1000 skills (end to end)", ms, "ms/query"))
        finally:
            eng.close()
    return rows


def _timed(fn: Any) -> float:
    t0 = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - t0) / 1e6


def run(quick: bool) -> list[dict[str, Any]]:
    qs = queries(100 if quick else 300)
    rows: list[dict[str, Any]] = []
    for n in (100, 1000, 10_000):
        rows += bench_bm25(n, qs[:50] if (quick and n == 10_000) else qs, 2 if quick else 5)
    rows += bench_engine(quick)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (< 30 s)")
    args = parser.parse_args()
    rows = run(args.quick)
    print("| benchmark | value | unit | baseline | baseline name | ratio |")
    print("|---|---:|---|---:|---|---:|")
    for r in rows:
        base = "" if r["baseline"] is None else f"{r['baseline']:.4g}"
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.1f}×"
        name = r["baseline_name"] or ""
        print(f"| {r['name']} | {r['value']:.4g} | {r['unit']} | {base} | {name} | {ratio} |")


if __name__ == "__main__":
    main()
