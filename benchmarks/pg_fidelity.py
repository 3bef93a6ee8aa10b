"""PostgreSQL memory search against the exact result (issue 11): quality, fidelity, latency.

The SQLite backend scores every chunk (exact by construction); the PostgreSQL backend scores
candidate pools drawn from the database. This indexes the same synthetic corpus into both and
reports, per channel: hit@10 / MRR on the planted facts, the top-10 overlap of PostgreSQL's
results with SQLite's (compared by path and start line, reranker off and on), and PostgreSQL's
median / p90 latency.

    GOCLAW_BENCH_DATABASE_URL=postgresql+psycopg://goclaw:goclaw@127.0.0.1:5432/goclaw_test \\
      .venv/bin/python benchmarks/pg_fidelity.py --chunks 100000 [--backend inprocess]

The PostgreSQL side runs in its own schema of that database, dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth_memory import generate

K = 10


def _rank(hits: list[Any], expect: list[dict[str, Any]]) -> int | None:
    for rank, h in enumerate(hits, 1):
        for e in expect:
            lo, hi = e["lines"]
            if h.path == e["path"] and h.start_line <= hi and lo <= h.end_line:
                return rank
    return None


def _open(ws: Path, url: str | None, src: Path, backend: str = "auto") -> Any:
    from goclaw.engine import Engine

    ws.mkdir(parents=True, exist_ok=True)
    eng = Engine.open(ws, url)
    eng.plugin_settings("memory").backend = backend
    eng.agents.create("bench")
    target = Path(eng.agent_dir(eng.agents.get("bench")))
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(src, target)
    eng.memory.index("bench", bulk=True)
    return eng


def run(n_chunks: int, url: str, backend: str) -> None:
    from sqlalchemy import create_engine, text

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    tmp = Path(tempfile.mkdtemp(prefix="goclaw-pgfid-"))
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(url)
    with admin.begin() as c:
        c.execute(text(f"CREATE SCHEMA {schema}"))
    sep = "&" if "?" in url else "?"
    pg_url = f"{url}{sep}options=-csearch_path%3D{schema},public"
    try:
        questions = [
            q for q in generate(tmp / "src", n_chunks=n_chunks, n_facts=150, seed=7) if q.get("expect")
        ]
        exact = _open(tmp / "sqlite", None, tmp / "src")
        pg = _open(tmp / "pg", pg_url, tmp / "src", backend)
        name = pg.memory.backend.name
        print(f"{n_chunks:,} chunks, {len(questions)} questions, PostgreSQL with backend {name}")
        for rerank in ("none", "overlap"):
            for eng in (exact, pg):
                eng.plugin_settings("memory").rerank = rerank
            for channel in ("hybrid", "lexical", "vector"):
                overlap, times, found, rr = [], [], 0, 0.0
                for q in questions:
                    a = exact.memory.search(q["question"], "bench", limit=K, channel=channel)
                    t = time.perf_counter()
                    b = pg.memory.search(q["question"], "bench", limit=K, channel=channel)
                    times.append(time.perf_counter() - t)
                    want = {(h.path, h.start_line) for h in a}
                    overlap.append(len(want & {(h.path, h.start_line) for h in b}) / max(1, len(want)))
                    r = _rank(b, q["expect"])
                    if r:
                        found, rr = found + 1, rr + 1 / r
                times.sort()
                print(
                    f"  reranker {rerank:7s} {channel:7s} hit@10 {found / len(questions):.3f} "
                    f"MRR {rr / len(questions):.3f}  "
                    f"top-10 overlap with exact {statistics.mean(overlap):.3f}  "
                    f"PostgreSQL median {statistics.median(times) * 1000:.1f} ms, "
                    f"p90 {times[int(0.9 * (len(times) - 1))] * 1000:.1f} ms"
                )
        exact.close()
        pg.close()
    finally:
        with admin.begin() as c:
            c.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        admin.dispose()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--backend", default="auto", help="the PostgreSQL side's backend: auto or inprocess")
    args = ap.parse_args()
    url = os.environ.get("GOCLAW_BENCH_DATABASE_URL") or os.environ.get("GOCLAW_TEST_DATABASE_URL")
    if not url:
        print("error: set GOCLAW_BENCH_DATABASE_URL to a PostgreSQL URL with pgvector", file=sys.stderr)
        return 2
    run(args.chunks, url, args.backend)
    return 0


if __name__ == "__main__":
    sys.exit(main())
