"""PostgreSQL memory search against the exact result: quality, fidelity, latency,
start-up.

The SQLite backend scores every chunk (exact by construction). On PostgreSQL the default
backend (``auto`` = ``postgresql``) computes the same ranking in the database; ``inprocess``
runs the same engine in each process. This indexes the same synthetic corpus into SQLite
and PostgreSQL and reports, per channel: hit@10 / MRR on the planted facts (both sides), the
top-10 overlap of PostgreSQL's results with SQLite's (compared by path and start line,
reranker off and on), and the p50 / p90 / p99 latency of both in the same run. Then the costs
a new process pays, each in a fresh child process on the same database: the first search
with no saved index (``inprocess``: the build from the table), the first search with the saved
index (the load), peak and resident memory after 20 searches, and the per-search
version-token read.

    GOCLAW_BENCH_DATABASE_URL=postgresql+psycopg://goclaw:goclaw@127.0.0.1:5432/goclaw_test \\
      .venv/bin/python benchmarks/pg_fidelity.py --chunks 100000 [--backend inprocess]

The PostgreSQL side runs in its own schema of that database, dropped at the end.

``--interleaved DIR`` measures both engines in alternating blocks of questions instead (full
text, hybrid and vector; reranker off unless ``--rerank overlap``): ``--block`` questions
(default 50) on SQLite, the same on PostgreSQL, the next block, and so on, so machine noise hits
both alike while each engine's working set stays in the CPU caches as in a process that runs
only it (``--block 1``: question by question, where each engine's search runs in caches the
other just filled; that costs the ``postgresql`` backend's hybrid search ~1.3 ms at 100k
chunks). The corpus is kept in ``DIR`` (the SQLite workspace) and in the schema named in
``DIR/schema`` (kept too): the first run loads them,
later runs (e.g. after a change of the backend's code; migrations run on open) reuse them.
Drop the schema by hand when done.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth_memory import generate, hit_rank

K = 10


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
        # The exact answers first, then the SQLite engine is closed: PostgreSQL's latency is
        # measured in a process that holds only its own index, as in use.
        exact = _open(tmp / "sqlite", None, tmp / "src")
        settings = [(r, c) for r in ("none", "overlap") for c in ("hybrid", "lexical", "vector")]
        want: dict[tuple[str, str], list[set[tuple[str, int]]]] = {}
        sqlite_ms: dict[tuple[str, str], list[float]] = {}
        sqlite_q: dict[tuple[str, str], tuple[int, float]] = {}
        for rerank, channel in settings:
            exact.plugin_settings("memory").rerank = rerank
            want[rerank, channel], sqlite_ms[rerank, channel] = [], []
            for q in questions:
                t = time.perf_counter()
                hits = exact.memory.search(q["question"], "bench", limit=K, channel=channel)
                sqlite_ms[rerank, channel].append(time.perf_counter() - t)
                want[rerank, channel].append({(h.path, h.start_line) for h in hits})
                r = hit_rank(hits, q["expect"])
                hit, mrr = sqlite_q.get((rerank, channel), (0, 0.0))
                sqlite_q[rerank, channel] = (hit + 1, mrr + 1 / r) if r else (hit, mrr)
        exact.close()
        t0 = time.perf_counter()
        pg = _open(tmp / "pg", pg_url, tmp / "src", backend)
        loaded = time.perf_counter() - t0
        name = pg.memory.backend.name
        print(
            f"{n_chunks:,} chunks, {len(questions)} questions, PostgreSQL with backend {name} "
            f"(indexed in {loaded:.1f} s, bulk)"
        )
        for rerank, channel in settings:
            pg.plugin_settings("memory").rerank = rerank
            overlap, times, found, rr = [], [], 0, 0.0
            for q, exact_top in zip(questions, want[rerank, channel], strict=True):
                t = time.perf_counter()
                b = pg.memory.search(q["question"], "bench", limit=K, channel=channel)
                times.append(time.perf_counter() - t)
                got = {(h.path, h.start_line) for h in b}
                overlap.append(len(exact_top & got) / max(1, len(exact_top)))
                r = hit_rank(b, q["expect"])
                if r:
                    found, rr = found + 1, rr + 1 / r
            times.sort()
            ref = sorted(sqlite_ms[rerank, channel])
            s_hit, s_mrr = sqlite_q.get((rerank, channel), (0, 0.0))
            print(
                f"  reranker {rerank:7s} {channel:7s} hit@10 {found / len(questions):.3f} "
                f"MRR {rr / len(questions):.3f}  "
                f"top-10 overlap with exact {statistics.mean(overlap):.3f}  "
                f"PostgreSQL p50 {statistics.median(times) * 1000:.1f} ms, "
                f"p90 {times[int(0.9 * (len(times) - 1))] * 1000:.1f} ms, "
                f"p99 {times[int(0.99 * (len(times) - 1))] * 1000:.1f} ms; "
                f"SQLite hit@10 {s_hit / len(questions):.3f} MRR {s_mrr / len(questions):.3f} "
                f"p50 {statistics.median(ref) * 1000:.1f} ms, "
                f"p99 {ref[int(0.99 * (len(ref) - 1))] * 1000:.1f} ms"
            )
        pg.close()
        _startup(tmp / "cold", pg_url, backend, questions)
    finally:
        with admin.begin() as c:
            c.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        admin.dispose()
        shutil.rmtree(tmp, ignore_errors=True)


def _machine() -> str:
    """The host's state when a run is measured: the time to gather 4 M random doubles from a
    256 MB array (memory latency: what an HNSW walk and a vector scan wait on) and to sum it
    (bandwidth). The same VM has run both engines 1.4-2x slower at times, a plain Python loop
    unchanged, and the ratio of a multi-process design against a single-process one moves
    with it."""
    import numpy as np

    a = np.ones(32_000_000)
    idx = np.random.default_rng(0).integers(0, len(a), 4_000_000)
    t = time.perf_counter()
    a[idx].sum()
    t1 = time.perf_counter()
    a.sum()
    t2 = time.perf_counter()
    return f"gather {(t1 - t) * 1000:.0f} ms, stream {(t2 - t1) * 1000:.0f} ms"


def interleaved(
    keep: Path, n_chunks: int, url: str, backend: str, block: int = 50, rerank: str = "none"
) -> None:
    """Both engines on one kept corpus, each block of ``block`` questions asked of SQLite, then
    of PostgreSQL, with the reranker ``rerank``."""
    from sqlalchemy import create_engine, text

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    keep.mkdir(parents=True, exist_ok=True)
    marker = keep / "schema"
    fresh = not marker.exists()
    if fresh:
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(url)
        with admin.begin() as c:
            c.execute(text(f"CREATE SCHEMA {schema}"))
        admin.dispose()
        generate(keep / "src", n_chunks=n_chunks, n_facts=150, seed=7)
    else:
        schema = marker.read_text().strip()
        admin = create_engine(url)
        with admin.connect() as c:
            found = c.execute(text("SELECT 1 FROM pg_namespace WHERE nspname = :s"), {"s": schema}).first()
        admin.dispose()
        if found is None:  # else every table would be made again in the next schema on the path
            sys.exit(f"error: schema {schema} (named in {marker}) is gone; remove {keep} to load afresh")
    sep = "&" if "?" in url else "?"
    pg_url = f"{url}{sep}options=-csearch_path%3D{schema},public"
    questions = [
        q for q in (json.loads(line) for line in (keep / "src" / "questions.jsonl").open()) if q.get("expect")
    ]
    t0 = time.perf_counter()
    if fresh:
        sq = _open(keep / "sqlite", None, keep / "src")
        pg = _open(keep / "pg", pg_url, keep / "src", backend)
        marker.write_text(schema)
        print(f"loaded both in {time.perf_counter() - t0:.1f} s")
    else:
        from goclaw.engine import Engine

        sq = Engine.open(keep / "sqlite", None)
        pg = Engine.open(keep / "pg", pg_url)
        pg.plugin_settings("memory").backend = backend
    for eng in (sq, pg):
        eng.plugin_settings("memory").rerank = rerank
        eng.memory.search("warm up", "bench", limit=K)
    print(
        f"{n_chunks:,} chunks, {len(questions)} questions, schema {schema}, "
        f"backend {pg.memory.backend.name}, blocks of {block}, reranker {rerank}; "
        f"machine: {_machine()}"
    )
    postings = _postings_per_question(pg, questions)
    common = set(sorted(range(len(questions)), key=lambda i: -postings[i])[: max(1, len(questions) // 10)])
    print(
        f"common words: the {len(common)} questions with the most postings "
        f"(at least {min(postings[i] for i in common):,})"
    )
    for channel in ("lexical", "hybrid", "vector"):
        ms: dict[str, list[float]] = {"sqlite": [], "pg": []}
        quality = {"sqlite": [0, 0.0], "pg": [0, 0.0]}
        overlap = []
        for first in range(0, len(questions), block):
            part = questions[first : first + block]
            tops: dict[str, list[set[tuple[str, int]]]] = {"sqlite": [], "pg": []}
            for name, eng in (("sqlite", sq), ("pg", pg)):
                for q in part:
                    t = time.perf_counter()
                    hits = eng.memory.search(q["question"], "bench", limit=K, channel=channel)
                    ms[name].append((time.perf_counter() - t) * 1000)
                    tops[name].append({(h.path, h.start_line) for h in hits})
                    r = hit_rank(hits, q["expect"])
                    if r:
                        quality[name][0] += 1
                        quality[name][1] += 1 / r
            for want, got in zip(tops["sqlite"], tops["pg"], strict=True):
                overlap.append(len(want & got) / max(1, len(want)))
        n = len(questions)
        line = [f"  {channel:7s} overlap {statistics.mean(overlap):.3f}"]
        for name in ("pg", "sqlite"):
            t = sorted(ms[name])
            line.append(
                f"{name} hit@10 {quality[name][0] / n:.3f} MRR {quality[name][1] / n:.3f} "
                f"p50 / p90 / p99 {statistics.median(t):.1f} / {t[int(0.9 * (n - 1))]:.1f} / "
                f"{t[int(0.99 * (n - 1))]:.1f} ms"
            )
        state = f"(load average {os.getloadavg()[0]:.1f}; {_machine()})"
        print("; ".join(line), state, flush=True)
        few = {name: sorted(ms[name][i] for i in common) for name in ms}
        print(
            f"  {channel:7s} common words: pg p50 / p99 {statistics.median(few['pg']):.1f} / "
            f"{few['pg'][int(0.99 * (len(common) - 1))]:.1f} ms; sqlite p50 / p99 "
            f"{statistics.median(few['sqlite']):.1f} / {few['sqlite'][int(0.99 * (len(common) - 1))]:.1f} ms",
            flush=True,
        )
    sq.close()
    pg.close()


def _postings_per_question(eng: Any, questions: list[dict[str, Any]]) -> list[int]:
    """Each question's postings in the agent: the document frequencies of its terms, summed (the
    work a full-text search does), from the chunks' stored terms."""
    from collections import Counter

    from sqlalchemy import text

    from goclaw_search.tokenize import query_terms

    agent = eng.agents.get("bench").id
    df: Counter[str] = Counter()
    with eng.db.engine.connect() as c:
        for (lex,) in c.execute(text("SELECT lex FROM memory_chunks WHERE agent_id = :a"), {"a": agent}):
            df.update(set((lex or "").split()))
    return [sum(df[t] for t in dict.fromkeys(query_terms(q["question"]))) for q in questions]


def _startup(ws: Path, url: str, backend: str, questions: list[dict[str, Any]]) -> None:
    """A new process's costs, twice on one fresh workspace: with no saved index, then with the
    one the first left behind."""
    ws.mkdir(parents=True, exist_ok=True)
    texts = [q["question"] for q in questions[:20]]
    for label in ("no saved index", "saved index"):
        done = subprocess.run(
            [sys.executable, __file__, "--child", str(ws), url, backend, json.dumps(texts)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"  new process, {label:14s}: Engine.open {r['open']:.2f} s, first search "
            f"{r['first']:.2f} s, then median {r['median'] * 1000:.1f} ms; peak RSS "
            f"{r['peak_mb']:.0f} MB, resident after 20 searches {r['anon_mb']:.0f} MB anonymous + "
            f"{r['file_mb']:.0f} MB file-backed (anonymous before the first search "
            f"{r['base_mb']:.0f} MB); version-token read median {r['token_ms']:.3f} ms"
        )


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def _child(ws: str, url: str, backend: str, texts: list[str]) -> None:
    """One new process: open, search once (timed), then 20 more; print the figures as JSON."""
    from goclaw.engine import Engine

    t0 = time.perf_counter()
    eng = Engine.open(Path(ws), url)
    eng.plugin_settings("memory").backend = backend
    if not any(a.name == "bench" for a in eng.agents.list()):
        raise SystemExit("no agent 'bench' in this database")
    opened = time.perf_counter() - t0
    embedder = eng.embedder()
    if embedder is not None:
        embedder.embed(["warm up the embedder"])  # its own start-up is not the index's
    base = _status_mb("RssAnon")
    t1 = time.perf_counter()
    eng.memory.search(texts[0], "bench", limit=K)
    first = time.perf_counter() - t1
    times = []
    for q in texts:
        t = time.perf_counter()
        eng.memory.search(q, "bench", limit=K)
        times.append(time.perf_counter() - t)
    from goclaw_memory.source import ChunkTableSource

    source, agent = ChunkTableSource(eng), eng.agents.get("bench").id
    tokens = []
    for _ in range(200):
        t = time.perf_counter()
        source.version(agent)
        tokens.append(time.perf_counter() - t)
    out = {
        "open": opened,
        "first": first,
        "median": statistics.median(times),
        # VmHWM, not ru_maxrss: the latter starts at the forking parent's size on Linux.
        "peak_mb": _status_mb("VmHWM"),
        "anon_mb": _status_mb("RssAnon"),
        "file_mb": _status_mb("RssFile"),
        "base_mb": base,
        "token_ms": statistics.median(tokens) * 1000,
    }
    eng.close()
    print(json.dumps(out))


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument(
        "--backend",
        default="auto",
        help="the PostgreSQL side's backend: auto (= postgresql), postgresql or inprocess",
    )
    ap.add_argument(
        "--interleaved", metavar="DIR", help="both engines in alternating blocks, corpus kept in DIR"
    )
    ap.add_argument(
        "--block", type=int, default=50, help="--interleaved: questions per block (1: question by question)"
    )
    ap.add_argument(
        "--rerank", choices=["none", "overlap"], default="none", help="--interleaved: the reranker of both"
    )
    args = ap.parse_args()
    url = os.environ.get("GOCLAW_BENCH_DATABASE_URL") or os.environ.get("GOCLAW_TEST_DATABASE_URL")
    if not url:
        print("error: set GOCLAW_BENCH_DATABASE_URL to a PostgreSQL URL with pgvector", file=sys.stderr)
        return 2
    if args.interleaved:
        if args.block < 1:
            print("error: --block must be at least 1", file=sys.stderr)
            return 2
        interleaved(Path(args.interleaved), args.chunks, url, args.backend, args.block, args.rerank)
    else:
        run(args.chunks, url, args.backend)
    return 0


if __name__ == "__main__":
    sys.exit(main())
