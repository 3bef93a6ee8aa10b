"""Indexing with precomputed vectors: goclaw against LanceDB and the sqlite-vec + FTS5 recipe.

    python benchmarks/indexing_bench.py                        # 10,000 and 100,000 chunks
    python benchmarks/indexing_bench.py --sizes 10000 --rounds 3
    python benchmarks/indexing_bench.py --baseline /path/to/other/checkout/.venv/bin/python
    python benchmarks/indexing_bench.py --rerank-passages 0     # without the passage sketches

Needs the ``bench`` extra (LanceDB, sqlite-vec + sqlean.py). The corpus is
``synth_memory.generate(n, n_facts=150, seed=7)``; goclaw indexes it once with its default
embedder, which fills the embedding cache. Then, per round, on the same data:

* **goclaw** (end to end): a fresh process indexes the files into a new database whose
  embedding cache holds every vector (so nothing is embedded): reading, hashing, chunking,
  looking the vectors up, tokenizing, the SQLite writes, the in-memory search index and its
  save, i.e. ``goclaw memory index`` end to end;
* **goclaw write path** (like for like with LanceDB, which is handed the chunks and vectors):
  in a fresh process the files are read, chunked and their vectors looked up first, untimed;
  timed: tokenizing, the SQLite rows (documents and chunks, one durable transaction per batch
  as in a real run, a large run without WAL checkpoints as ``MemoryIndexer.index`` does) and
  the in-memory search index with its save, with the garbage collector paused as
  ``MemoryIndexer.index`` pauses it;
* **baseline** (``--baseline PYTHON``): both, with another checkout's interpreter (its
  editable install), e.g. the code before a change, in the same run;
* **LanceDB**: ``create_table`` with goclaw's chunks and vectors + ``create_fts_index`` (the
  ``retrieval_bench.py`` peer);
* **sqlite-vec + FTS5**: FTS5 (porter) and vec0 inserts in one transaction.

Wall seconds and CPU seconds (every thread of the process) per system; the medians over the
rounds are printed, with chunks/s and the ratios system ÷ goclaw end to end and system ÷
goclaw's write path (above 1: goclaw is faster). goclaw's wall time is until ``index()``
returns (the index is then complete and searchable); a large run leaves its passage sketches
and the save of the index to a background thread (docs/decisions.md), whose time is printed
as "then" (``Engine.close`` waiting for it) and whose CPU is in "cpu incl. background". The
machine's load average is printed with each size: compare within a size, not across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

WORKER = r"""
import json, os, shutil, sys, time, resource
from pathlib import Path
from goclaw.engine import Engine
base, agent_src, ws, mode = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
ws.mkdir(parents=True)
eng = Engine.open(ws)
if sys.argv[5]:  # --rerank-passages: 0 turns the passage step (and its index-time sketches) off
    eng.plugin_settings("memory").rerank_passages = int(sys.argv[5])
eng.agents.create("bench")
target = Path(eng.agent_dir(eng.agents.get("bench")))
if target.exists():
    shutil.rmtree(target)
shutil.copytree(agent_src, target)
import sqlite3
src = sqlite3.connect(base / ".goclaw" / "goclaw.db")  # plain SQL: any goclaw version reads it
rows = src.execute(
    "SELECT chunk_hash, provider, model, dim, embedding, created_at FROM embedding_cache"
).fetchall()
src.close()
with eng.db.engine.begin() as b:
    b.exec_driver_sql(
        "INSERT OR IGNORE INTO embedding_cache (chunk_hash, provider, model, dim, embedding, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [tuple(r) for r in rows],
    )
if mode == "end-to-end":
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    report = eng.memory.index("bench")
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    written, embedded = report.chunks_written, report.chunks_embedded
else:  # "write": the chunks and their vectors are ready; time what LanceDB is timed for
    from goclaw_memory.chunking import chunk_text
    from goclaw_memory.embedding_cache import vectors_for
    from goclaw_memory.index_changes import ChangeSet
    from goclaw_memory.index_scan import IndexReport, batches, scan
    from goclaw_memory.indexer import MemoryIndexer

    svc = eng.memory
    agent = eng.agents.get("bench")
    indexer = MemoryIndexer(eng, svc.backend, max_chunk_len=svc.settings.max_chunk_len)
    indexer._changes = ChangeSet(agent.id)
    report = IndexReport(agent="bench")
    embedder, space = indexer._space(svc.embedder()[0], report)
    pending, _seen = scan(target, [""], {}, report)
    prepared = []
    for batch in batches(pending):
        for p in batch:
            p.chunks = chunk_text(p.text, indexer.max_chunk_len)
        chunks = [c for p in batch for c in p.chunks]
        prepared.append((batch, vectors_for(eng, chunks, embedder, space, report)))
    try:  # as MemoryIndexer.index runs it (older checkouts have no pause)
        from goclaw_memory.indexer import paused_gc
    except ImportError:
        from contextlib import nullcontext as paused_gc
    try:  # a large run commits without WAL checkpoints and checkpoints once after (bulk_wal)
        from goclaw_memory import bulk_wal
        from goclaw_memory.index_scan import estimated_chunks
        bulk = bulk_wal.database_path(eng) is not None and estimated_chunks(pending) >= bulk_wal.BULK
    except ImportError:  # older checkouts
        bulk_wal, bulk = None, False
    indexer._bulk = bulk
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    with paused_gc():
        if hasattr(indexer, "_write_batches"):  # tokenizing batch N+1 while batch N is written
            ready = (indexer._ready(batch, vectors) for batch, vectors in prepared)
            indexer._write_batches(agent.id, ready, space, report, None, len(pending))
        else:  # older checkouts: tokenizing, the SQLite rows (one transaction a batch)
            for batch, vectors in prepared:
                indexer._write_each(agent.id, batch, vectors, space, report)
        if bulk:
            indexer._bulk = False
            bulk_wal.checkpoint_later(eng)
        svc.backend.apply_changes(indexer._changes.freeze())  # the search index and its save
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    written, embedded = report.chunks_written, report.chunks_embedded
t1 = time.perf_counter()
eng.close()  # waits for the work a run leaves to the background (passage sketches, the save)
after = time.perf_counter() - t1
out = {"wall": wall, "cpu": cpu, "after": after, "cpu_all": time.process_time() - cpu0,
       "chunks": written, "embedded": embedded}
print(json.dumps(out))
"""


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _goclaw(
    python: str, base: Path, agent_src: Path, ws: Path, mode: str, passages: str = ""
) -> dict[str, Any]:
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", HF_HUB_OFFLINE="1")
    out = subprocess.run(
        [python, "-c", WORKER, str(base), str(agent_src), str(ws), mode, passages],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(ws.parent),
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"goclaw worker failed ({python}): {out.stderr.strip().splitlines()[-1:]}")
    shutil.rmtree(ws, ignore_errors=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if result["embedded"]:
        raise SystemExit(f"goclaw embedded {result['embedded']} chunks: the cache was not used")
    return result


def _lance(folder: Path, texts: list[str], matrix: Any) -> dict[str, float]:
    import lancedb
    import numpy as np
    import pyarrow as pa

    db = lancedb.connect(str(folder))
    dim = matrix.shape[1]
    data = pa.table(
        {
            "id": pa.array(np.arange(len(texts), dtype=np.int64)),
            "text": pa.array(texts),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1), pa.float32()), dim),
        }
    )
    c0, t0 = _cpu(), time.perf_counter()
    table = db.create_table("chunks", data, mode="overwrite")
    table.create_fts_index("text", replace=True)  # retrieval_bench.py's call (deprecated name, same index)
    out = {"wall": time.perf_counter() - t0, "cpu": _cpu() - c0}
    shutil.rmtree(folder, ignore_errors=True)
    return out


def _sqlite_vec(path: Path, texts: list[str], matrix: Any) -> dict[str, float]:
    import numpy as np
    import sqlean
    import sqlite_vec

    db = sqlean.connect(str(path))
    db.enable_load_extension(True)
    sqlite_vec.load(db)
    db.enable_load_extension(False)
    dim = matrix.shape[1]
    c0, t0 = _cpu(), time.perf_counter()
    db.execute("CREATE VIRTUAL TABLE fts USING fts5(text, tokenize='porter unicode61')")
    db.execute(f"CREATE VIRTUAL TABLE vec USING vec0(embedding float[{dim}] distance_metric=cosine)")
    db.executemany("INSERT INTO fts(rowid, text) VALUES (?, ?)", list(enumerate(texts)))
    db.executemany(
        "INSERT INTO vec(rowid, embedding) VALUES (?, ?)",
        [(i, matrix[i].astype(np.float32).tobytes()) for i in range(len(texts))],
    )
    db.commit()
    out = {"wall": time.perf_counter() - t0, "cpu": _cpu() - c0}
    db.close()
    path.unlink()
    return out


def _prepare(n: int, tmp: Path) -> tuple[Path, Path, list[str], Any]:
    """The corpus, a workspace holding every vector in its embedding cache, and the chunks."""
    import numpy as np
    from synth_memory import generate

    from goclaw.engine import Engine

    agent_src = tmp / f"src-{n}"
    generate(agent_src, n_chunks=n, n_facts=150, seed=7)
    base = tmp / f"base-{n}"
    base.mkdir()
    eng = Engine.open(base)
    eng.agents.create("bench")
    target = Path(eng.agent_dir(eng.agents.get("bench")))
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(agent_src, target)
    eng.memory.index("bench")
    with eng.db.engine.connect() as c:
        rows = c.exec_driver_sql("SELECT text, embedding FROM memory_chunks ORDER BY id").all()
    eng.close()
    texts = [r[0] for r in rows]
    matrix = np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
    return base, agent_src, texts, matrix


def run(sizes: list[int], rounds: int, baseline: str | None, passages: str = "") -> list[dict[str, Any]]:
    results = []
    tmp = Path(tempfile.mkdtemp(prefix="goclaw-indexing-"))
    try:
        for n in sizes:
            base, agent_src, texts, matrix = _prepare(n, tmp)
            runs: dict[str, list[dict[str, float]]] = {}
            for r in range(rounds):
                for mode, name in (("end-to-end", "goclaw"), ("write", "goclaw write path")):
                    runs.setdefault(name, []).append(
                        _goclaw(sys.executable, base, agent_src, tmp / f"g{r}", mode, passages)
                    )
                    if baseline:
                        runs.setdefault(name.replace("goclaw", "baseline", 1), []).append(
                            _goclaw(baseline, base, agent_src, tmp / f"b{r}", mode, passages)
                        )
                runs.setdefault("LanceDB", []).append(_lance(tmp / f"lance{r}", texts, matrix))
                runs.setdefault("sqlite-vec + FTS5", []).append(_sqlite_vec(tmp / f"sv{r}.db", texts, matrix))
            ours = statistics.median(x["wall"] for x in runs["goclaw"])
            ours_write = statistics.median(x["wall"] for x in runs["goclaw write path"])
            for name, xs in runs.items():
                wall = statistics.median(x["wall"] for x in xs)
                cpu = statistics.median(x["cpu"] for x in xs)
                after = statistics.median(x.get("after", 0.0) for x in xs)
                cpu_all = statistics.median(x.get("cpu_all", x["cpu"]) for x in xs)
                results.append(
                    {
                        "chunks": len(texts),
                        "system": name,
                        "wall_s": round(wall, 3),
                        "cpu_s": round(cpu, 3),
                        "then_s": round(after, 3),  # goclaw: background work after index() returned
                        "cpu_all_s": round(cpu_all, 3),  # goclaw: CPU including it
                        "chunks_per_s": round(len(texts) / wall),
                        # system ÷ goclaw time: above 1, goclaw is faster
                        "ratio": round(wall / ours, 2),
                        "ratio_write": round(wall / ours_write, 2),
                        "load": round(os.getloadavg()[0], 1),
                    }
                )
            shutil.rmtree(base, ignore_errors=True)
            shutil.rmtree(agent_src, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated chunk counts")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--baseline", help="another checkout's python (its editable goclaw), timed alike")
    ap.add_argument(
        "--rerank-passages",
        default="",
        help="the memory setting rerank_passages for goclaw's runs (0: no passage sketches at index time)",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    sizes = [int(x) for x in args.sizes.split(",") if x]
    rows = run(sizes, max(1, args.rounds), args.baseline, args.rerank_passages)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            print(
                f"{r['chunks']:>7,} chunks  {r['system']:<24} wall {r['wall_s']:>7.2f} s  "
                f"cpu {r['cpu_s']:>6.2f} s  then {r['then_s']:>5.2f} s  cpu incl. background "
                f"{r['cpu_all_s']:>6.2f} s  {r['chunks_per_s']:>7,} chunks/s  "
                f"÷ end-to-end {r['ratio']:>5}  ÷ write path {r['ratio_write']:>5}  (load {r['load']})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
