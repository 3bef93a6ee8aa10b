#!/usr/bin/env python3
"""Benchmark goclaw's offline embedders: load time and throughput.

    python benchmarks/embedder_bench.py [--provider static|onnx] [--chunks 1000] [--chars 500]
                                        [--repeats 3] [--model-dir DIR] [--threads N]

``static`` is the bundled default (``StaticEmbedder``); ``onnx`` is all-MiniLM-L6-v2 on
onnxruntime (``OnnxEmbedder``, the ``onnx`` extra), held to ``--threads`` (default 2).

Measures, each as the median of ``--repeats`` runs:
  * load: constructing a fresh embedder and loading its tokenizer + model (warm page cache; the
    onnx session is shared within a process, so its load is timed once);
  * batch: embedding ``--chunks`` synthetic English-like chunks of ~``--chars`` characters in one call;
  * query: embedding one short query at a time (latency per call).
Prints a small markdown table. Runs offline; the corpus is generated from a fixed seed.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

try:
    from goclaw_embeddings.static_model import StaticEmbedder
except ImportError:  # running from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "plugins"))
    from goclaw_embeddings.static_model import StaticEmbedder

_VOCAB_TEXT = (
    "the agent memory context engine stores retrieves skills bootstrap files session user tool call "
    "result summary long term short vector index search query ranking chunk document embedding model "
    "database connection timeout retry error handling configuration plugin hook prompt template token "
    "budget compaction consolidation recall relevance score cosine similarity keyword hybrid fusion "
    "python package install release version test suite benchmark latency throughput cache file system "
    "watch change event update delete insert transaction migration schema table column row primary key "
    "a an of to in for on with by from as is are was were be been it this that these those and or but "
    "not can will should would could may might must do does did have has had password reset account "
    "settings security email address customer invoice payment order shipping delivery weather city"
)
_WORDS = _VOCAB_TEXT.split()


def make_chunks(n: int, chars: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    chunks: list[str] = []
    for _ in range(n):
        parts: list[str] = []
        length = 0
        while length < chars:
            sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 18)))
            sentence = sentence[0].upper() + sentence[1:] + rng.choice([".", ".", ".", "?", "!"])
            parts.append(sentence)
            length += len(sentence) + 1
        chunks.append(" ".join(parts)[:chars])
    return chunks


def main() -> None:
    ap = argparse.ArgumentParser(description="Benchmark goclaw's offline embedders.")
    ap.add_argument("--provider", choices=("static", "onnx"), default="static")
    ap.add_argument("--threads", type=int, default=2, help="onnx: inference threads")
    ap.add_argument("--chunks", type=int, default=1000)
    ap.add_argument("--chars", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--model-dir", type=Path, default=None)
    args = ap.parse_args()

    chunks = make_chunks(args.chunks, args.chars)
    queries = [" ".join(random.Random(i).sample(_WORDS, 6)) for i in range(args.queries)]

    def make() -> Any:
        if args.provider == "onnx":
            from goclaw_embeddings.onnx_model import OnnxEmbedder

            return OnnxEmbedder(args.model_dir, args.threads)
        return StaticEmbedder(args.model_dir)

    load_times: list[float] = []
    for _ in range(1 if args.provider == "onnx" else args.repeats):
        emb = make()
        t0 = time.perf_counter()
        emb.load()
        load_times.append(time.perf_counter() - t0)

    emb.embed(chunks[:10])  # warm-up
    batch_times: list[float] = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        vecs = emb.embed(chunks)
        batch_times.append(time.perf_counter() - t0)
    assert vecs.shape == (len(chunks), emb.dim)

    query_times: list[float] = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for q in queries:
            emb.embed([q])
        query_times.append((time.perf_counter() - t0) / max(len(queries), 1))

    load_s = statistics.median(load_times)
    batch_s = statistics.median(batch_times)
    query_s = statistics.median(query_times)
    print(f"### `{emb.provider}` / `{emb.model}` (dim {emb.dim})")
    print()
    print(
        f"{args.chunks} chunks of ~{args.chars} chars; median of {args.repeats} runs; "
        f"Python {platform.python_version()} on {platform.machine()}"
    )
    print()
    print("| metric | value |")
    print("| --- | ---: |")
    print(f"| load (tokenizer + model) | {load_s * 1000:.0f} ms |")
    print(f"| batch of {args.chunks} chunks | {batch_s * 1000:.0f} ms |")
    print(f"| throughput | {args.chunks / batch_s:,.0f} embeddings/s |")
    print(f"| single query latency | {query_s * 1000:.2f} ms |")


def run(quick: bool) -> list[dict[str, object]]:
    """Rows for ``benchmarks/run.py`` (1,000 chunks of ~500 characters; medians)."""
    repeats = 3
    chunks = make_chunks(1000, 500)
    loads = []
    for _ in range(repeats):
        emb = StaticEmbedder()
        t0 = time.perf_counter()
        emb.load()
        loads.append(time.perf_counter() - t0)
    emb.embed(chunks[:10])
    batches = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        emb.embed(chunks)
        batches.append(time.perf_counter() - t0)
    queries = [" ".join(random.Random(i).sample(_WORDS, 6)) for i in range(50 if quick else 200)]
    t0 = time.perf_counter()
    for q in queries:
        emb.embed([q])
    per_query = (time.perf_counter() - t0) / len(queries)
    return [
        {"name": "static embedder load", "value": statistics.median(loads) * 1000, "unit": "ms"},
        {
            "name": "static embedder throughput, 1,000 chunks of ~500 chars",
            "value": 1000 / statistics.median(batches),
            "unit": "embeddings/s",
        },
        {"name": "static embedder single query", "value": per_query * 1000, "unit": "ms"},
    ]


if __name__ == "__main__":
    main()
