#!/usr/bin/env python3
"""Benchmark the episodic tier of memory search: it should cost nothing when empty and little
when full.

    python benchmarks/consolidation_bench.py [--quick] [--chunks N] [--summaries N]

Every ``memory_search`` also asks the consolidation plugin for episodic summaries (the
``goclaw_memory_search_extra`` hook). Rows, per backend (SQLite; PostgreSQL when
``GOCLAW_BENCH_DATABASE_URL`` or ``GOCLAW_TEST_DATABASE_URL`` is set), for an agent whose
memory holds 10,000 chunks (static embedder), medians over 30 queries:

* ``episodic tier per search, 0 summaries``: the hook's work alone
  (``engine.service("episodic").hits``) when the agent has no episodic summary;
* ``episodic tier per search, 1,000 summaries``: the same with 1,000 summaries;
* ``memory search with / without the episodic tier``: ``memory.search_response`` with
  ``include_extra`` on and off, so the tier's share of a whole search shows.
"""

from __future__ import annotations

import argparse
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
sys.path[:0] = [str(ROOT), str(ROOT / "plugins"), str(ROOT / "benchmarks")]


def _median_ms(fn: Any, qs: list[str]) -> float:
    fn(qs[0])  # warm-up (loads indexes, the embedder)
    times = []
    for q in qs:
        t0 = time.perf_counter_ns()
        fn(q)
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1e6


def _paired_ms(a: Any, b: Any, qs: list[str]) -> tuple[float, float]:
    """Medians of ``a`` and ``b`` run alternately on each query (a shared machine's load
    drifts; alternating keeps the comparison fair), each query asked once untimed first: the
    memory reranker remembers the passages of the chunks it has seen, so whichever ran first
    would pay for both; the order also swaps from one query to the next."""
    ta: list[int] = []
    tb: list[int] = []
    for i, q in enumerate(qs):
        b(q)
        pairs = ((a, ta), (b, tb)) if i % 2 else ((b, tb), (a, ta))
        for fn, out in pairs:
            t0 = time.perf_counter_ns()
            fn(q)
            out.append(time.perf_counter_ns() - t0)
    return statistics.median(ta) / 1e6, statistics.median(tb) / 1e6


def _summaries(engine: Any, agent_id: str, n: int, seed: int = 3) -> None:
    from memory_bench import WORDS

    from goclaw.contracts.memory import NewEpisode

    rng = random.Random(seed)
    store = engine.service("episodic")
    for i in range(n):
        text = ". ".join(" ".join(rng.choices(WORDS, k=rng.randint(8, 16))) for _ in range(rng.randint(3, 8)))
        user = "" if i % 3 else f"user{i % 7}"
        row = store.build(NewEpisode(agent_id, user, f"s{i}", text.capitalize() + ".", f"src-{i}"))
        store.insert(row, publish=False)


def bench_backend(
    tmp: Path, backend: str, url: str | None, chunks: int, summaries: int
) -> list[dict[str, Any]]:
    from memory_bench import _open, make_corpus, queries

    eng = _open(tmp / f"episodic-{backend}", url, "static")
    try:
        agent = eng.agents.get("bench")
        make_corpus(eng.agent_dir(agent), chunks // 10, 10, seed=5)
        eng.memory.index("bench")
        qs = queries(31)
        name = "SQLite" if backend == "sqlite" else "PostgreSQL"
        store = eng.service("episodic")
        rows = []

        def tier(q: str) -> Any:
            return store.hits(agent.id, None, q, 6)

        def with_tier(q: str) -> Any:
            return eng.memory.search_response(q, "bench", include_extra=True)

        def without(q: str) -> Any:
            return eng.memory.search_response(q, "bench", include_extra=False)

        for count in (0, summaries):
            if count:
                _summaries(eng, agent.id, count)
                assert tier(qs[0]), "the episodic tier finds nothing: the benchmark measures nothing"
            label = f"{count:,} summaries, {chunks:,} chunks ({name})"
            rows.append(_row(f"episodic tier per search, {label}", _median_ms(tier, qs), "ms"))
            full, bare = _paired_ms(with_tier, without, qs)
            rows.append(_row(f"memory search with the episodic tier, {label}", full, "ms", bare))
            rows[-1]["baseline_name"] = "the same search without the tier"
        return rows
    finally:
        eng.close()


class _PgSchema:
    """A throw-away schema on the PostgreSQL server (dropped afterwards)."""

    def __init__(self, base: str) -> None:
        import uuid

        from sqlalchemy import create_engine, text

        from goclaw.store.database import normalise_url

        self.schema = "bench_" + uuid.uuid4().hex[:10]
        self.admin = create_engine(normalise_url(base))
        with self.admin.begin() as conn:
            conn.execute(text(f"CREATE SCHEMA {self.schema}"))
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        sep = "&" if "?" in base else "?"
        self.url = f"{normalise_url(base)}{sep}options=-csearch_path%3D{self.schema},public"

    def drop(self) -> None:
        from sqlalchemy import text

        with self.admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE"))
        self.admin.dispose()


def run(quick: bool, chunks: int | None = None, summaries: int | None = None) -> list[dict[str, Any]]:
    chunks = chunks or (2_000 if quick else 10_000)
    summaries = summaries or (200 if quick else 1_000)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HOME"] = str(Path(tmp) / "home")
        rows += bench_backend(Path(tmp), "sqlite", None, chunks, summaries)
        base = os.environ.get("GOCLAW_BENCH_DATABASE_URL") or os.environ.get("GOCLAW_TEST_DATABASE_URL")
        if base:
            schema = _PgSchema(base)
            try:
                rows += bench_backend(Path(tmp), "postgresql", schema.url, chunks, summaries)
            finally:
                schema.drop()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 chunks and 200 summaries")
    parser.add_argument("--chunks", type=int, default=None)
    parser.add_argument("--summaries", type=int, default=None)
    args = parser.parse_args()
    rows = run(args.quick, args.chunks, args.summaries)
    print("| benchmark | value | unit | baseline | baseline name | ratio |")
    print("|---|---:|---|---:|---|---:|")
    for r in rows:
        base = "" if r["baseline"] is None else f"{r['baseline']:.4g}"
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}×"
        name = r["baseline_name"] or ""
        print(f"| {r['name']} | {r['value']:.4g} | {r['unit']} | {base} | {name} | {ratio} |")


if __name__ == "__main__":
    main()
