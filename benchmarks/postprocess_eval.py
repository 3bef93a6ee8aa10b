"""Decay, MMR and reranking on and off, measured (docs/memory.md "After fusion: reranker, passages,
decay and MMR"; docs/decisions.md "The overlap reranker is on; decay and MMR are off").

    python benchmarks/postprocess_eval.py [--synth-chunks 10000] [--json OUT]

Runs ``goclaw eval``'s harness (hybrid channel, SQLite, the default static embedder, the plugin
defaults for fusion) on the quick-start labelled set and on a synthetic set
(:mod:`synth_memory`), once per configuration, and prints recall@10, MRR, nDCG@10 and ms/query.
Also prints the per-query cost of each step at the synthetic scale, and the top-score
distributions of the unanswerable and the rightly answered questions (for the auto-injection
threshold).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

CONFIGS: dict[str, dict[str, Any]] = {
    "baseline (all off)": {},
    "decay 30 d": {"decay": True, "decay_half_life_days": 30.0},
    "decay 90 d": {"decay": True, "decay_half_life_days": 90.0},
    "decay 365 d": {"decay": True, "decay_half_life_days": 365.0},
    "mmr λ 0.7": {"mmr": True, "mmr_lambda": 0.7},
    "mmr λ 0.9": {"mmr": True, "mmr_lambda": 0.9},
    "rerank overlap (w 0.3)": {"rerank": "overlap"},
    "rerank overlap w 0.5": {"rerank": "overlap", "rerank_weight": 0.5},
    "rerank overlap + mmr λ 0.9": {"rerank": "overlap", "mmr": True, "mmr_lambda": 0.9},
}
OFF = {
    "decay": False,
    "mmr": False,
    "rerank": "none",
    "rerank_weight": 0.3,
    "mmr_lambda": 0.7,
    "decay_half_life_days": 30.0,
}


def _cli(workspace: Path, *args: str) -> None:
    subprocess.run(
        [str(Path(sys.executable).with_name("goclaw")), "--workspace", str(workspace), *args],
        check=True,
        capture_output=True,
    )


def _quickstart(tmp: Path) -> Path:
    ws = tmp / "quickstart"
    ws.mkdir()
    shutil.copytree(ROOT / "examples" / "quickstart" / "agents", ws / "agents")
    (ws / "goclaw.toml").write_text('[plugins.embeddings]\nprovider = "static"\n', encoding="utf-8")
    for agent in ("support", "scratchpad"):
        _cli(ws, "agent", "create", agent)
    return ws


def _synth(tmp: Path, chunks: int) -> tuple[Path, list[dict[str, Any]]]:
    from synth_memory import generate

    ws = tmp / "synth"
    ws.mkdir()
    (ws / "goclaw.toml").write_text('[plugins.embeddings]\nprovider = "static"\n', encoding="utf-8")
    _cli(ws, "agent", "create", "synth")
    questions = generate(ws / "agents" / "synth", n_chunks=chunks, n_facts=150, seed=7)
    return ws, questions


def _run(engine: Any, questions: Any, agents: list[str]) -> dict[str, Any]:
    from goclaw_memory.evaluation import evaluate

    settings = engine.plugin_settings("memory")
    out: dict[str, Any] = {}
    for name, cfg in CONFIGS.items():
        for key, value in {**OFF, **cfg}.items():
            setattr(settings, key, value)
        report = evaluate(engine, questions, channels=["hybrid"]).as_json()["channels"]["hybrid"]
        out[name] = report
        o = report["overall"]
        print(
            f"  {name:<28} recall@10 {o['recall@10']:.3f}  mrr {o['mrr']:.3f}  "
            f"ndcg@10 {o['ndcg@10']:.3f}  {report.get('ms_per_query', 0):.2f} ms/q",
            flush=True,
        )
    for key, value in OFF.items():
        setattr(settings, key, value)
    return out


def _step_costs(engine: Any, questions: Any, agent: str) -> dict[str, float]:
    """Median µs per query of each step alone, on the real candidates of each question (hybrid,
    limit 10: 30 fused chunks, de-duplicated), so search-time noise does not blur them."""
    import copy
    import statistics

    from goclaw.contracts.search import FusionSettings, SearchQuery
    from goclaw_memory.hybrid import build_hits
    from goclaw_memory.postprocess import (
        _TERMS,
        _WORDSETS,
        apply_decay,
        apply_mmr,
        apply_rerank,
        overlap_rerank,
    )
    from goclaw_search.tokenize import query_terms

    memory = engine.memory
    settings = memory.settings
    a = engine.agents.get(agent)
    root = engine.agent_dir(a)
    embedder, _ = memory.embedder()
    cands = []
    for q in questions[:150]:
        request = SearchQuery(
            agent_id=a.id,
            users=("",),
            text=q.question,
            terms=tuple(query_terms(q.question)),
            vector=embedder.embed([q.question])[0],
            space=(embedder.provider, embedder.model, int(embedder.dim)),
            limit=10,
            fusion=FusionSettings(settings.fusion, settings.text_weight, settings.vector_weight),
        )
        result = memory.backend.search(request)
        rows = memory.backend.rows(a.id, [c.id for c in result.chunks])
        cands.append((q.question, build_hits(result.chunks, rows, len(result.chunks))))
    steps = {
        "decay": lambda q, h: apply_decay(h, root, settings),
        "reranker, none answering": lambda q, h: apply_rerank(memory.reranker(q, a, None, None), h, 20),
        "overlap reranker, chunks seen before": lambda q, h: overlap_rerank(q, h[:20]),
        "overlap reranker, first sight": lambda q, h: (_TERMS.clear(), overlap_rerank(q, h[:20])),
        "mmr (pick 10 of ~30), chunks seen before": lambda q, h: apply_mmr(h, 0.7, 10),
        "mmr, first sight": lambda q, h: (_WORDSETS.clear(), apply_mmr(h, 0.7, 10)),
    }
    settings.rerank = "none"
    out: dict[str, float] = {}
    for name, fn in steps.items():
        times = []
        for _round in range(5):
            for q, hits in cands:
                copies = copy.deepcopy(hits)
                started = time.perf_counter()
                fn(q, copies)
                times.append((time.perf_counter() - started) * 1e6)
        out[name] = statistics.median(times)
    out["candidates per query"] = statistics.mean(len(h) for _q, h in cands)
    return out


def _distributions(results: dict[str, Any]) -> None:
    for name in ("baseline (all off)", "rerank overlap (w 0.3)"):
        report = results[name]
        un = report.get("unanswerable_top_score", {})
        right = report.get("answerable_top_score_when_right", {})
        print(f"  {name}: unanswerable top score {un}")
        print(f"  {name}: answered-right top score {right}")


THRESHOLDS = (0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.9)


def _autoinject(engine: Any, questions: Any) -> dict[str, Any]:
    """Auto-injection on the labelled set: per threshold, the share of unanswerable questions
    that would inject something (false injections) and of answerable ones whose injected hits
    (those >= the threshold among the 5 best) include evidence. Then the real section for every
    question at each threshold, end to end (goclaw_episodic.autoinject)."""
    from goclaw_memory.evaluation import matches

    per_q = []
    for q in questions:
        hits = engine.memory.search_response(q.question, q.agent, q.user, limit=10).hits
        per_q.append((q, hits))
    sweep: dict[str, Any] = {}
    for t in THRESHOLDS:
        un = [q for q, h in per_q if q.kind == "unanswerable"]
        false = sum(1 for q, h in per_q if q.kind == "unanswerable" and h and h[0].score >= t)
        ans = [(q, h) for q, h in per_q if q.kind != "unanswerable"]
        useful = sum(1 for q, h in ans if any(matches(x, e) for x in h[:5] if x.score >= t for e in q.expect))
        sweep[str(t)] = {"false_injection": false / len(un), "evidence_injected": useful / len(ans)}
        print(f"    threshold {t}: false injections {false}/{len(un)}, evidence injected {useful}/{len(ans)}")
    return sweep


def _autoinject_sections(engine: Any, questions: Any, threshold: float) -> dict[str, float]:
    from goclaw_episodic.autoinject import render_memory_context

    settings = engine.plugin_settings("episodic")
    settings.auto_inject_document_threshold = threshold
    un = [q for q in questions if q.kind == "unanswerable"]
    ans = [q for q in questions if q.kind != "unanswerable"]
    injected_un = 0
    with_evidence = 0
    for q in questions:
        agent = engine.agents.get(q.agent)
        text = render_memory_context(engine, agent, q.user, q.question)
        if q.kind == "unanswerable":
            injected_un += bool(text)
        elif text and any(_mentions(text, e) for e in q.expect):
            with_evidence += 1
    out = {"false_injection": injected_un / len(un), "evidence_injected": with_evidence / len(ans)}
    print(f"    end to end at {threshold}: {out}")
    return out


def _mentions(section: str, expect: Any) -> bool:
    """Whether an injected line points at the evidence (``path#La-b`` overlapping its lines)."""
    import re

    if expect.any_of:
        return any(_mentions(section, e) for e in expect.any_of)
    for path, a, b in re.findall(r"- (\S+)#L(\d+)-(\d+):", section):
        lines = expect.lines
        if path == expect.path and (lines is None or not (int(b) < lines[0] or int(a) > lines[1])):
            return True
    return bool(expect.text) and " ".join(expect.text.split()).casefold() in section.casefold()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--synth-chunks", type=int, default=10_000)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    from goclaw.engine import Engine
    from goclaw_memory.evaluation import load_questions, parse_questions

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        ws = _quickstart(tmp)
        questions = load_questions(ROOT / "examples" / "quickstart" / "eval" / "questions.jsonl")
        print(f"quick-start set ({len(questions)} questions)", flush=True)
        with Engine.open(ws) as engine:
            for agent in ("support", "scratchpad"):
                engine.memory.index(agent)
            results["quickstart"] = _run(engine, questions, ["support", "scratchpad"])
            _distributions(results["quickstart"])
            settings = engine.plugin_settings("memory")
            for label, rerank in (
                ("auto-injection, rerank none", "none"),
                ("auto-injection, rerank overlap", "overlap"),
            ):
                settings.rerank = rerank
                print(f"  {label}")
                results[label] = _autoinject(engine, questions)
                for t in (0.3, 0.6, 0.65, 0.7):
                    results[f"{label} sections {t}"] = _autoinject_sections(engine, questions, t)
            settings.rerank = "none"
        sws, raw = _synth(tmp, args.synth_chunks)
        synth_q = parse_questions([json.dumps(q) for q in raw], "synth")
        print(f"synthetic set, {args.synth_chunks} chunks ({len(synth_q)} questions)", flush=True)
        with Engine.open(sws) as engine:
            started = time.perf_counter()
            engine.memory.index("synth")
            print(f"  indexed in {time.perf_counter() - started:.1f} s", flush=True)
            results["synth"] = _run(engine, synth_q, ["synth"])
            costs = _step_costs(engine, synth_q, "synth")
            results["step_ms"] = costs
            print(
                "  per-query median µs of each step: " + ", ".join(f"{k} {v:.0f}" for k, v in costs.items())
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
