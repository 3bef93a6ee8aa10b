"""Memory benchmarks: indexing speed, unchanged re-index, edit + next search.

    python benchmarks/memory_bench.py            # full sizes (10k documents, 10k and 100k chunks)
    python benchmarks/memory_bench.py --quick    # smaller sizes, well under a minute

Search speed and quality against LanceDB, chroma, sqlite-vec + FTS5 and numpy + bm25s (on
SQLite and PostgreSQL) are measured by ``retrieval_bench.py``.
"""

from __future__ import annotations

import random
import shutil
import statistics
import sys
import tempfile
import time
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


def bench_edit(tmp: Path, chunks: int) -> list[dict[str, Any]]:
    """Re-index after editing one file, plus the next search (the in-memory index is patched)."""
    ws = tmp / f"edit-{chunks}"
    eng = _open(ws, None, "static")
    agent = eng.agents.get("bench")
    paras = 10
    make_corpus(eng.agent_dir(agent), chunks // paras, paras, seed=5)
    report = eng.memory.index("bench")
    assert report.chunks_written == chunks, report
    qs = queries(3)
    eng.memory.search_response(qs[0], "bench", include_extra=False)  # loads the index
    edit = _edit_then_search(eng, agent, qs[1])
    eng.close()
    return [_row(f"edit one file: re-index + next search, {chunks:,} chunks (SQLite)", edit * 1000, "ms")]


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
        for n in [10_000] if quick else [10_000, 100_000]:
            rows += bench_edit(tmp, n)
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
