"""goclaw with the ``lancedb`` search backend (plugin ``goclaw.lancedb``) against goclaw's
built-in SQLite backend, on the same synthetic memory (benchmarks/synth_memory.py, 150 planted
facts asked three ways), through the public API (``engine.memory``):

* indexing time (chunking, the default static embedder, the database and, for LanceDB, its
  table and full-text index), each into a fresh workspace;
* the first search after opening a fresh engine (SQLite: loads its saved index; LanceDB:
  opens its table);
* per-query latency medians per channel, the two backends' queries interleaved;
* hit@10 and MRR on the planted facts, and top-10 agreement between the two backends.

    .venv/bin/pip install -e '.[lancedb]'     # or the dev / bench extras
    .venv/bin/python benchmarks/lancedb_backend_bench.py --chunks 10000 [--json]

``ratio`` = SQLite backend ÷ LanceDB backend for times (above 1: LanceDB faster).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_rows import row  # noqa: E402
from synth_memory import generate  # noqa: E402

K = 10


def _open(ws: Path, backend: str) -> Any:
    from goclaw.engine import Engine

    return Engine.open(ws, plugins={"memory": {"backend": backend}})


def _workspace(tmp: Path, name: str, src: Path, backend: str) -> tuple[Path, float]:
    """A fresh workspace holding the synthetic agent, indexed with ``backend``: (path, seconds)."""
    ws = tmp / name
    eng = _open(ws, backend)
    eng.agents.create("bench")
    target = Path(eng.agent_dir(eng.agents.get("bench")))
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(src, target)
    t = time.perf_counter()
    eng.memory.index("bench")
    seconds = time.perf_counter() - t
    eng.close()
    return ws, seconds


def _search(eng: Any, q: str, channel: str = "hybrid") -> list[tuple[str, int, int]]:
    hits = eng.memory.search_response(q, "bench", limit=K, channel=channel, include_extra=False).hits
    return [(h.path, h.start_line, h.end_line) for h in hits]


def _rank(results: list[tuple[str, int, int]], expect: list[dict[str, Any]]) -> int | None:
    for rank, (path, a, b) in enumerate(results, 1):
        for e in expect:
            lo, hi = e["lines"]
            if path == e["path"] and a <= hi and lo <= b:
                return rank
    return None


def run(n_chunks: int, n_queries: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    label = f"{n_chunks:,} chunks"
    with tempfile.TemporaryDirectory(prefix="goclaw-lance-bench-") as d:
        tmp = Path(d)
        src = tmp / "src"
        questions = [q for q in generate(src, n_chunks=n_chunks, n_facts=150, seed=7) if q.get("expect")]
        ws_sqlite, t_sqlite = _workspace(tmp, "ws-sqlite", src, "sqlite")
        ws_lance, t_lance = _workspace(tmp, "ws-lance", src, "lancedb")
        rows.append(row(f"index {label}: goclaw + lancedb backend", t_lance, "s", t_sqlite, "sqlite backend"))

        engines = {"sqlite": _open(ws_sqlite, "sqlite"), "lancedb": _open(ws_lance, "lancedb")}
        first: dict[str, float] = {}
        for name, eng in engines.items():
            t = time.perf_counter()
            _search(eng, questions[0]["question"])
            first[name] = time.perf_counter() - t
        rows.append(
            row(
                f"first search after open {label}: lancedb backend",
                first["lancedb"] * 1000,
                "ms",
                first["sqlite"] * 1000,
                "sqlite backend",
            )
        )

        timed = [q["question"] for q in questions[:n_queries]]
        for channel in ("hybrid", "lexical", "vector"):
            times: dict[str, list[float]] = {"sqlite": [], "lancedb": []}
            for q in timed:
                for name, eng in engines.items():  # interleaved: machine noise hits both alike
                    t = time.perf_counter()
                    _search(eng, q, channel)
                    times[name].append(time.perf_counter() - t)
            med = {n: statistics.median(v) * 1000 for n, v in times.items()}
            rows.append(
                row(
                    f"{channel} search {label}: lancedb backend",
                    med["lancedb"],
                    "ms/query",
                    med["sqlite"],
                    "sqlite backend",
                )
            )

        quality: dict[str, dict[str, float]] = {}
        agree = 0.0
        for name, eng in engines.items():
            hits, rr = 0, 0.0
            for q in questions:
                r = _rank(_search(eng, q["question"]), q["expect"])
                if r is not None:
                    hits += 1
                    rr += 1.0 / r
            quality[name] = {"hit": hits / len(questions), "mrr": rr / len(questions)}
        for q in questions:
            a = set(_search(engines["sqlite"], q["question"]))
            b = set(_search(engines["lancedb"], q["question"]))
            agree += len(a & b) / max(1, len(a))
        for name in ("lancedb", "sqlite"):
            rows.append(row(f"hit@10 hybrid {label}: {name} backend", quality[name]["hit"] * 100, "%"))
            rows.append(row(f"MRR hybrid {label}: {name} backend", quality[name]["mrr"] * 100, "x100"))
        rows.append(
            row(f"top-10 agreement lancedb vs sqlite backend {label}", agree / len(questions) * 100, "%")
        )
        for eng in engines.values():
            eng.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=60, help="timed queries per channel")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        import lancedb  # noqa: F401
    except ImportError:
        print("error: needs the lancedb extra: pip install -e '.[lancedb]'", file=sys.stderr)
        return 2
    rows = run(args.chunks, args.queries)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            base = (
                f"  (sqlite backend {r['baseline']}, ratio {r['ratio']})" if r["baseline"] is not None else ""
            )
            print(f"{r['name']}: {r['value']} {r['unit']}{base}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
