"""Memory benchmarks (issue 5): indexing speed, unchanged re-index, hybrid search latency.

    python benchmarks/memory_bench.py            # full sizes (10k documents, 10k and 100k chunks)
    python benchmarks/memory_bench.py --quick    # smaller sizes, well under a minute

PostgreSQL rows run when ``GOCLAW_BENCH_DATABASE_URL`` (or ``GOCLAW_TEST_DATABASE_URL``) names a
database with pgvector; a private schema is created and dropped. Use a database whose
``public`` schema holds no goclaw tables.

Search latency is end to end through ``engine.memory.search_response`` (agent lookup, query
embedding with the default static embedder, full-text channel, vector channel, row fetch,
hybrid merge), median of 30 queries after one warm-up. Extra memory tiers (episodic summaries,
issue 6) are left out: they are measured by their own benchmark. The baseline is a plain
brute-force hybrid over the same chunks held in Python/numpy memory: exact BM25 (k1 = 1.2,
b = 0.75) by scanning every chunk's pre-tokenised terms, exact cosine with one matrix product,
the same max-normalised 0.3/0.7 merge. The "top-6 agreement" rows compare goclaw's top 6 with
that reference's: the synthetic corpus has no relevance labels, so this shows how closely each
backend follows an exact BM25 + cosine hybrid, not recall.
"""

from __future__ import annotations

import math
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from bench_rows import row as _row

WORDS = [
    "account",
    "agent",
    "alert",
    "archive",
    "backup",
    "billing",
    "branch",
    "budget",
    "build",
    "cache",
    "calendar",
    "campaign",
    "cluster",
    "config",
    "contract",
    "customer",
    "dashboard",
    "database",
    "deadline",
    "deploy",
    "design",
    "docker",
    "domain",
    "draft",
    "email",
    "feature",
    "feedback",
    "firewall",
    "forecast",
    "gateway",
    "hardware",
    "hiring",
    "invoice",
    "issue",
    "kettle",
    "kitchen",
    "ledger",
    "license",
    "lunch",
    "meeting",
    "merge",
    "metrics",
    "migration",
    "mobile",
    "network",
    "office",
    "onboarding",
    "outage",
    "partner",
    "password",
    "payment",
    "pipeline",
    "planning",
    "policy",
    "printer",
    "privacy",
    "product",
    "project",
    "python",
    "quarterly",
    "queue",
    "release",
    "report",
    "research",
    "revenue",
    "review",
    "roadmap",
    "router",
    "runbook",
    "sales",
    "schedule",
    "security",
    "server",
    "service",
    "sprint",
    "staging",
    "storage",
    "support",
    "survey",
    "team",
    "testing",
    "ticket",
    "timeline",
    "training",
    "travel",
    "upgrade",
    "vendor",
    "version",
    "website",
    "wifi",
    "window",
    "workflow",
    "coffee",
    "garden",
    "holiday",
    "weather",
]


def _vocab(n: int, rng: random.Random) -> list[str]:
    syll = ["ka", "lo", "mi", "ne", "ru", "ta", "shi", "po", "ze", "va", "qu", "dor", "lin", "mar"]
    extra = {"".join(rng.choice(syll) for _ in range(rng.randint(2, 4))) for _ in range(n)}
    return WORDS + sorted(extra)


def make_corpus(root: Path, docs: int, paras_per_doc: int, seed: int = 7) -> int:
    """Write ``docs`` memory files of ``paras_per_doc`` ~600-char paragraphs; return chunk count."""
    rng = random.Random(seed)
    vocab = _vocab(3000, rng)
    cum: list[float] = []
    acc = 0.0
    for i in range(len(vocab)):
        acc += 1 / (i + 1)  # Zipf
        cum.append(acc)
    mem = root / "memory"
    for d in range(docs):
        paras = []
        for _ in range(paras_per_doc):
            text = " ".join(rng.choices(vocab, cum_weights=cum, k=120))
            paras.append(text[: text.rfind(" ", 0, 580)].capitalize() + ".")
        sub = mem / f"{d % 100:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"note-{d:06d}.md").write_text("\n\n".join(paras) + "\n", encoding="utf-8")
    return docs * paras_per_doc


def queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.sample(WORDS, rng.randint(2, 4))) for _ in range(n)]


def _open(workspace: Path, url: str | None, provider: str) -> Any:
    from goclaw.engine import Engine

    eng = Engine.open(workspace, url, plugins={"embeddings": {"provider": provider}})
    if not any(a.name == "bench" for a in eng.agents.list()):
        eng.agents.create("bench")
    return eng


def _pg_url() -> str | None:
    return os.environ.get("GOCLAW_BENCH_DATABASE_URL") or os.environ.get("GOCLAW_TEST_DATABASE_URL")


class _PgSchema:
    def __init__(self, base: str) -> None:
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


# --------------------------------------------------------------------------- indexing


def bench_indexing(tmp: Path, docs: int, reindex_docs: int) -> list[dict[str, Any]]:
    rows = []
    for provider, label in (("none", "without embeddings"), ("static", "with the default embedder")):
        ws = tmp / f"idx-{provider}"
        eng = _open(ws, None, provider)
        chunks = make_corpus(eng.agent_dir(eng.agents.get("bench")), docs, 1)
        t = time.perf_counter()
        report = eng.memory.index("bench")
        elapsed = time.perf_counter() - t
        assert report.chunks_written == chunks, report
        rows.append(
            _row(
                f"memory index, {chunks:,} chunks, {label} (SQLite)",
                chunks / elapsed,
                "chunks/s",
                higher_is_better=True,
            )
        )
        eng.close()
    ws = tmp / "reindex"
    eng = _open(ws, None, "static")
    make_corpus(eng.agent_dir(eng.agents.get("bench")), reindex_docs, 1, seed=3)
    eng.memory.index("bench")
    times = []
    for _ in range(3):
        t = time.perf_counter()
        report = eng.memory.index("bench")
        times.append(time.perf_counter() - t)
        assert report.skipped_unchanged == reindex_docs and report.chunks_embedded == 0
    rows.append(
        _row(
            f"memory re-index, {reindex_docs:,} unchanged documents (SQLite)",
            statistics.median(times) * 1000,
            "ms",
        )
    )
    eng.close()
    return rows


# --------------------------------------------------------------------------- search


class BruteForceHybrid:
    """The baseline: everything in Python/numpy memory, scanned per query."""

    def __init__(self, eng: Any, agent_id: str) -> None:
        import numpy as np
        from sqlalchemy import select

        from goclaw.store.models import MemoryChunk

        table = MemoryChunk.__table__  # the store's Vector type decodes BLOBs and pgvector alike
        with eng.db.engine.connect() as conn:
            rows = conn.execute(
                select(table.c.id, table.c.text, table.c.embedding).where(table.c.agent_id == agent_id)
            ).all()
        self.ids = [r[0] for r in rows]
        self.terms = [Counter(re.findall(r"\w+", r[1].lower())) for r in rows]
        df: Counter[str] = Counter()
        for t in self.terms:
            df.update(t.keys())
        n = len(rows)
        self.idf = {w: math.log((n - c + 0.5) / (c + 0.5) + 1) for w, c in df.items()}
        lengths = [sum(t.values()) for t in self.terms]
        avgdl = sum(lengths) / max(1, n)
        # BM25 (k1 = 1.2, b = 0.75): the length part of each chunk's denominator, precomputed.
        self.norm = [1.2 * (0.25 + 0.75 * dl / avgdl) for dl in lengths]
        self.matrix = np.vstack([np.asarray(r[2], dtype=np.float32) for r in rows])
        self.embedder = eng.embedder()

    def search(self, query: str, k: int = 6) -> list[int]:
        import numpy as np

        q_terms = set(re.findall(r"\w+", query.lower()))
        lex = {}
        for i, t in enumerate(self.terms):
            s = sum(self.idf[w] * t[w] * 2.2 / (t[w] + self.norm[i]) for w in q_terms if w in t)
            if s > 0:
                lex[i] = s
        best = max(lex.values(), default=1.0)
        q = self.embedder.embed([query])[0]
        sims = self.matrix @ q
        top_vec = np.argpartition(-sims, 24)[:24]
        scores = {i: 0.3 * s / best for i, s in lex.items()}
        for i in top_vec:
            scores[int(i)] = scores.get(int(i), 0.0) + 0.7 * max(0.0, float(sims[i]))
        return [self.ids[i] for i in sorted(scores, key=lambda i: -scores[i])[:k]]


def bench_search(tmp: Path, chunks: int, backend: str, url: str | None) -> list[dict[str, Any]]:
    ws = tmp / f"search-{backend}-{chunks}"
    eng = _open(ws, url, "static")
    agent = eng.agents.get("bench")
    paras = 10
    make_corpus(eng.agent_dir(agent), chunks // paras, paras, seed=5)
    t = time.perf_counter()
    report = eng.memory.index("bench")
    build = time.perf_counter() - t
    assert report.chunks_written == chunks, report
    qs = queries(31)
    # Warm-up: loads the vector matrix (SQLite).
    eng.memory.search_response(qs[0], "bench", include_extra=False)
    ours = []
    for q in qs[1:]:
        t = time.perf_counter()
        hits = eng.memory.search_response(q, "bench", include_extra=False).hits
        ours.append(time.perf_counter() - t)
        assert hits
    alone = []  # the full-text channel by itself (no embedder, or --channel lexical)
    for q in qs[1:]:
        t = time.perf_counter()
        eng.memory.search_response(q, "bench", include_extra=False, channel="lexical")
        alone.append(time.perf_counter() - t)
    base = BruteForceHybrid(eng, agent.id)
    theirs = []
    agree = []
    for q in qs[1:11]:
        t = time.perf_counter()
        reference = base.search(q)
        theirs.append(time.perf_counter() - t)
        got = eng.memory.search_response(q, "bench", limit=6, include_extra=False).hits
        agree.append(len({h.chunk_id for h in got} & set(reference)) / 6)
    recall = _vector_recall(eng, agent.id, base, qs[1:11])
    edit = _edit_then_search(eng, agent, qs[1]) if backend == "sqlite" else None
    eng.close()
    name = "SQLite" if backend == "sqlite" else "PostgreSQL"
    extra = (
        [_row(f"edit one file: re-index + next search, {chunks:,} chunks (SQLite)", edit * 1000, "ms")]
        if edit is not None  # the vector channel is exact by construction
        else [_row(f"vector channel recall@24 vs exact cosine, {chunks:,} chunks (HNSW)", 100 * recall, "%")]
    )
    return [
        *extra,
        _row(
            f"memory hybrid search, {chunks:,} chunks ({name})",
            statistics.median(ours) * 1000,
            "ms",
            statistics.median(theirs) * 1000,
            "brute-force Python/numpy hybrid",
        ),
        # Not a recall figure (the corpus has no relevance labels): how far the ranking follows
        # an exact BM25 + cosine hybrid that scores every chunk (see the module docstring).
        _row(
            f"full-text search alone, {chunks:,} chunks ({name})",
            statistics.median(alone) * 1000,
            "ms",
        ),
        _row(
            f"top-6 agreement with the brute-force hybrid, {chunks:,} chunks ({name})",
            100 * statistics.mean(agree),
            "%",
        ),
        _row(
            f"memory index build, {chunks:,} chunks with embeddings ({name})",
            chunks / build,
            "chunks/s",
            higher_is_better=True,
        ),
    ]


def _edit_then_search(eng: Any, agent: Any, query: str) -> float:
    """Seconds to re-index after one file changed plus the next search (the in-memory vector
    matrix is patched in place, not reloaded)."""
    path = sorted((Path(eng.agent_dir(agent)) / "memory").rglob("*.md"))[0]
    path.write_text(path.read_text(encoding="utf-8") + "\nOne more paragraph.\n", encoding="utf-8")
    t = time.perf_counter()
    report = eng.memory.index("bench")
    eng.memory.search_response(query, "bench", include_extra=False)
    elapsed = time.perf_counter() - t
    assert report.rechunked == 1, report
    return elapsed


def _vector_recall(eng: Any, agent_id: str, base: BruteForceHybrid, qs: list[str], k: int = 24) -> float:
    """Share of the exact top-k (cosine over every chunk) that the backend's vector channel returns."""
    import numpy as np

    embedder = eng.embedder()
    space = (embedder.provider, embedder.model, int(embedder.dim))
    ids = np.asarray(base.ids)
    found = []
    for q in qs:
        v = embedder.embed([q])[0]
        exact = set(ids[np.argsort(-(base.matrix @ v))[:k]].tolist())
        with eng.db.engine.connect() as conn, conn.begin():
            got = {i for i, _ in eng.memory.backend.vector(agent_id, [""], v, space, k, conn=conn)}
        found.append(len(exact & got) / k)
    return statistics.mean(found)


class _Rows(list):  # type: ignore[type-arg]
    """Prints each row to stderr as it is measured (long full runs keep partial results)."""

    def __iadd__(self, new: Any) -> _Rows:
        for r in new:
            print(f"  {r['name']}: {r['value']} {r['unit']} (baseline {r['baseline']})", file=sys.stderr)
        self.extend(new)
        return self


def run(quick: bool) -> list[dict[str, Any]]:
    tmp = Path(tempfile.mkdtemp(prefix="goclaw-memory-bench-"))
    rows: list[dict[str, Any]] = _Rows()
    try:
        rows += bench_indexing(tmp, 2_000 if quick else 10_000, 2_000 if quick else 10_000)
        sizes = [10_000] if quick else [10_000, 100_000]
        for n in sizes:
            rows += bench_search(tmp, n, "sqlite", None)
        pg = _pg_url()
        if pg:
            for n in [5_000] if quick else sizes:
                schema = _PgSchema(pg)
                try:
                    rows += bench_search(tmp, n, "postgresql", schema.url)
                finally:
                    schema.drop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return list(rows)


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    result = run(quick)
    print("| benchmark | value | unit | baseline | ratio |")
    print("|---|---:|---|---:|---:|")
    for r in result:
        base = "" if r["baseline"] is None else f"{r['baseline']} ({r['baseline_name']})"
        print(f"| {r['name']} | {r['value']} | {r['unit']} | {base} | {r['ratio'] or ''} |")
