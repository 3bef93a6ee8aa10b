"""Auto-injection thresholds, measured (docs/decisions.md "Auto-injection decides on an absolute
score", docs/consolidation.md "Choosing the thresholds"; dated tables in benchmarks/results/).

    python benchmarks/autoinject_eval.py [--json OUT]

On the labelled quick-start set (``examples/quickstart``, 173 questions, 24 unanswerable), with
the default static embedder on SQLite:

1. **Memory files**: the Memory Context section rendered end to end
   (``render_memory_context``) per ``auto_inject_document_threshold``: how many unanswerable
   questions inject something, and how many answerable ones inject a chunk of their evidence's
   file.
2. **Episodic summaries**: the support agent's daily notes made into session summaries (one per
   day, the first 1,200 characters), all of them and random subsets (questions whose day has no
   summary then count as unanswerable); per ``auto_inject_threshold``, how many questions inject
   a summary falsely, and how many inject the summary of their evidence's day among the 5
   injected.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from postprocess_eval import _quickstart  # noqa: E402

DOCUMENT_THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7)
EPISODIC_THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7)
SUBSETS = ((None, 0), (10, 1), (10, 2), (4, 3))  # (summaries kept or all, random seed)


def _paths(q: Any) -> list[str]:
    return [a.path for e in q.expect for a in (e.any_of or (e,)) if a.path]


def documents(engine: Any, questions: list[Any]) -> list[dict[str, Any]]:
    from goclaw_episodic.autoinject import render_memory_context

    settings = engine.plugin_settings("episodic")
    rows = []
    for threshold in DOCUMENT_THRESHOLDS:
        settings.auto_inject_document_threshold = threshold
        false = right = 0
        for q in questions:
            text = render_memory_context(engine, engine.agents.get(q.agent), q.user, q.question)
            if q.kind == "unanswerable":
                false += bool(text)
            elif text and any(f"- {p}#L" in text for p in _paths(q)):
                right += 1
        rows.append({"threshold": threshold, "false": false, "evidence": right})
    return rows


def episodic(engine: Any, questions: list[Any], keep: int | None, seed: int) -> dict[str, Any]:
    from goclaw.contracts.memory import NewEpisode
    from goclaw_episodic.store import EpisodicStore

    notes = sorted((ROOT / "examples" / "quickstart" / "agents" / "support" / "memory").glob("*.md"))
    if keep is not None:
        notes = sorted(random.Random(seed).sample(notes, keep))
    name = f"episodes-{keep or 'all'}-{seed}"
    agent = engine.agents.create(name)
    store = EpisodicStore(engine)
    for note in notes:
        body = " ".join(re.sub(r"^#.*$", "", note.read_text(encoding="utf-8"), flags=re.M).split())[:1200]
        new = NewEpisode(agent.id, "", f"s-{note.stem}", f"Session {note.stem}: {body}", f"src-{note.stem}")
        store.insert(store.build(new, redact_text=False))
    have = {n.stem for n in notes}
    found = {}
    for q in questions:
        if q.agent == "support":
            hits = store.search(agent.id, q.user, q.question, limit=5)
            found[q.id] = [(r.session_key[2:], s) for r, s in hits]
    out: dict[str, Any] = {"summaries": len(notes), "rows": []}
    for threshold in EPISODIC_THRESHOLDS:
        false = right = answerable = 0
        for q in questions:
            if q.agent != "support":
                continue
            days = {Path(p).stem for p in _paths(q) if p.startswith("memory/")} & have
            injected = {day for day, s in found[q.id] if s >= threshold}
            if q.kind == "unanswerable" or not days:
                false += bool(injected)
            else:
                answerable += 1
                right += bool(days & injected)
        unanswerable = sum(1 for q in questions if q.agent == "support") - answerable
        out["rows"].append(
            {
                "threshold": threshold,
                "false": false,
                "of": unanswerable,
                "evidence": right,
                "answerable": answerable,
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, help="write the results here too")
    args = parser.parse_args()
    from goclaw.engine import Engine
    from goclaw_memory.evaluation import load_questions

    questions = load_questions(ROOT / "examples" / "quickstart" / "eval" / "questions.jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        ws = _quickstart(Path(tmp))  # postprocess_eval's: the quick-start agents, static embedder
        with Engine.open(ws) as engine:
            for name in ("support", "scratchpad"):
                engine.memory.index(name)
            results: dict[str, Any] = {"documents": documents(engine, questions)}
            results["episodic"] = [episodic(engine, questions, keep, seed) for keep, seed in SUBSETS]
    unanswerable = sum(q.kind == "unanswerable" for q in questions)
    print(
        f"Memory files, end to end ({unanswerable} unanswerable, {len(questions) - unanswerable} answerable):"
    )
    print(
        "| `auto_inject_document_threshold` | "
        + " | ".join(str(r["threshold"]) for r in results["documents"])
        + " |"
    )
    print("|---|" + "---:|" * len(results["documents"]))
    print(
        "| false / evidence | "
        + " | ".join(f"{r['false']} / {r['evidence']}" for r in results["documents"])
        + " |"
    )
    print("\nEpisodic summaries (false of / evidence of):")
    print("| summaries | " + " | ".join(str(t) for t in EPISODIC_THRESHOLDS) + " |")
    print("|---|" + "---:|" * len(EPISODIC_THRESHOLDS))
    for run in results["episodic"]:
        cells = [f"{r['false']}/{r['of']} · {r['evidence']}/{r['answerable']}" for r in run["rows"]]
        print(f"| {run['summaries']} | " + " | ".join(cells) + " |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
