"""The labelled question set shipped with examples/quickstart."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from goclaw_memory.evaluation import Expect, Question, evaluate, load_questions
from tests.helpers import load_script, run_cli

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "quickstart"
QUESTIONS = EXAMPLE / "eval" / "questions.jsonl"

_STOP_WORDS = (
    "the a an of to in on for and or is are was were be by with what which who whom how when where why "
    "does do did can could should would our we us their they them its it that this from at as after before "
    "over into out up about than then there been has have had more most much many any every each same own "
    "not no his her she he one two times time"
)
STOP = set(_STOP_WORDS.split())


def _flat(expect: Sequence[Expect]) -> list[Expect]:
    return [a for e in expect for a in (e.any_of or (e,))]


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP and len(w) > 2}


def test_the_set_is_up_to_date_with_the_memory_files() -> None:
    module = load_script(EXAMPLE / "eval" / "build_questions.py")
    assert module.build() == QUESTIONS.read_text(encoding="utf-8"), (
        "examples/quickstart/eval/questions.jsonl is stale: run build_questions.py"
    )


def test_the_set_covers_every_kind() -> None:
    questions = load_questions(QUESTIONS)
    kinds = Counter(q.kind for q in questions)
    assert len(questions) >= 150
    assert kinds["unanswerable"] >= 20
    for kind in ("exact-code", "paraphrase", "temporal", "multi-hop", "preference"):
        assert kinds[kind] >= 20, kind
    assert all(len(q.expect) >= 2 for q in questions if q.kind == "multi-hop")
    assert all(q.user for q in questions if q.kind == "preference")
    assert {q.agent for q in questions} == {"support", "scratchpad"}


def test_evidence_exists_and_paraphrases_share_no_keyword() -> None:
    for q in load_questions(QUESTIONS):
        words: set[str] = set()
        for e in _flat(q.expect):
            assert e.path is not None and e.lines is not None, q.id
            lines = (EXAMPLE / "agents" / q.agent / e.path).read_text(encoding="utf-8").split("\n")
            assert e.lines[1] <= len(lines), q.id
            words |= _words(" ".join(lines[e.lines[0] - 1 : e.lines[1]]))
        if q.kind == "paraphrase":
            assert not _words(q.question) & words, (q.id, _words(q.question) & words)


def test_an_oracle_scores_one_on_the_shipped_set() -> None:
    questions = load_questions(QUESTIONS)

    def oracle(q: Question, channel: str, limit: int) -> tuple[Sequence[Any], Sequence[str]]:
        evidence = [e.any_of[0] if e.any_of else e for e in q.expect]
        return [
            {"path": e.path, "start_line": e.lines[0], "end_line": e.lines[1], "snippet": "", "score": 1}
            for e in evidence
            if e.lines
        ], []

    overall = evaluate(None, questions, channels=["hybrid"], search=oracle).as_json()
    summary = overall["channels"]["hybrid"]["overall"]
    assert summary["recall@10"] == summary["mrr"] == summary["ndcg@10"] == 1.0


@pytest.fixture
def quickstart(workspace: Path) -> Path:
    shutil.copytree(EXAMPLE / "agents", workspace / "agents")
    shutil.copy(EXAMPLE / "goclaw.toml", workspace / "goclaw.toml")
    for args in (["agent", "create", "support"], ["agent", "create", "scratchpad"]):
        result = run_cli(args, workspace=workspace)
        assert result.code == 0, result.err
    return workspace


def test_the_harness_runs_on_the_quickstart_memory(quickstart: Path) -> None:
    from goclaw.engine import Engine

    questions = load_questions(QUESTIONS)
    with Engine.open(quickstart) as engine:
        for agent in ("support", "scratchpad"):
            engine.memory.index(agent)
        report = evaluate(engine, questions).as_json()
    lexical = report["channels"]["lexical"]
    # Floors, far below the measured figures (docs/eval.md): they catch a broken harness or a broken
    # channel, not a ranking change.
    assert lexical["by_kind"]["exact-code"]["recall@10"] >= 0.9
    for channel in ("lexical", "vector", "hybrid"):
        overall = report["channels"][channel]["overall"]
        assert overall["n"] == sum(1 for q in questions if q.kind != "unanswerable")
        assert overall["recall@10"] >= 0.5, channel
        assert 0 < overall["context_chars@1"] < overall["context_chars@10"]
        assert report["channels"][channel]["unanswerable_top_score"]["n"] >= 20
    assert report["channels"]["vector"]["by_kind"]["preference"]["recall@10"] >= 0.7
