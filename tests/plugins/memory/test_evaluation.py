"""The evaluation harness: metrics by hand, question files, ``goclaw eval``."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from goclaw_memory.evaluation import (
    Expect,
    Question,
    QuestionsError,
    evaluate,
    matches,
    parse_questions,
    question_metrics,
)
from tests.helpers import run_cli
from tests.memory_helpers import write


def hit(path: str, a: int, b: int, snippet: str = "", score: float = 0.5) -> dict[str, Any]:
    return {"path": path, "start_line": a, "end_line": b, "snippet": snippet, "score": score}


def test_matching_rules() -> None:
    e = Expect(path="memory/2026-11-03.md", lines=(4, 6))
    assert matches(hit("memory/2026-11-03.md", 6, 9), e)  # touching ranges overlap
    assert matches(hit("memory/2026-11-03.md", 1, 4), e)
    assert not matches(hit("memory/2026-11-03.md", 7, 9), e)
    assert not matches(hit("memory/2026-11-04.md", 4, 6), e)  # same lines, other file
    t = Expect(text="Stripe  reference\nre_3QxT7mK2Lp9")
    assert matches(hit("x.md", 1, 2, "... stripe reference re_3QxT7mK2Lp9."), t)  # case, spaces
    assert not matches(hit("x.md", 1, 2, "re_3QxT7mK2Lp"), t)
    both = Expect(path="a.md", text="foo")
    assert matches(hit("a.md", 1, 1, "a foo"), both)
    assert not matches(hit("b.md", 1, 1, "a foo"), both)


def test_metrics_of_a_hand_made_case() -> None:
    expect = (Expect(path="a.md", lines=(1, 3)), Expect(text="foo"))
    hits = [
        hit("b.md", 1, 9, "nothing"),
        hit("a.md", 2, 4),  # evidence 1
        hit("a.md", 3, 5),  # evidence 1 again: no second gain
        hit("c.md", 1, 2, "xx foo"),  # evidence 2
    ]
    m = question_metrics(hits, expect)
    assert m["recall@1"] == 0 and m["hit@1"] == 0
    assert m["recall@5"] == 1 and m["recall@10"] == 1 and m["hit@5"] == 1
    assert m["mrr"] == 0.5
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    assert m["ndcg@10"] == pytest.approx(dcg / (1 + 1 / math.log2(3)))  # 0.6509
    assert question_metrics(hits[:3], expect)["recall@10"] == 0.5  # half the evidence found


def _questions() -> list[Question]:
    return [
        Question("q1", "one", "support", "multi-hop", None, (Expect("a.md", (1, 3)), Expect(text="foo"))),
        Question("q2", "two", "support", "exact-code", None, (Expect("x.md", (10, 10)),)),
        Question("q3", "three", "support", "unanswerable"),
    ]


def test_report_averages_a_tiny_case_computed_by_hand() -> None:
    answers = {
        "q1": [hit("b.md", 1, 9, "nothing"), hit("a.md", 2, 4), hit("a.md", 3, 5), hit("c.md", 1, 2, "foo")],
        "q2": [hit("x.md", 10, 12, "abc", 0.9)],
        "q3": [hit("z.md", 1, 1, "12345", 0.25), hit("y.md", 1, 1, "1234567", 0.2)],
    }

    def search(q: Question, channel: str, limit: int) -> tuple[Sequence[Any], Sequence[str]]:
        assert limit == 10
        return answers[q.id], ["a note"] if channel == "vector" else []

    report = evaluate(None, _questions(), channels=["vector", "hybrid"], search=search).as_json()
    assert (report["questions"], report["answerable"], report["unanswerable"]) == (3, 2, 1)
    overall = report["channels"]["hybrid"]["overall"]
    assert overall["n"] == 2
    assert overall["recall@1"] == 0.5 and overall["recall@5"] == 1.0 and overall["mrr"] == 0.75
    assert overall["ndcg@10"] == pytest.approx((0.6509 + 1) / 2, abs=1e-4)
    assert report["channels"]["hybrid"]["by_kind"]["exact-code"]["mrr"] == 1.0
    assert report["channels"]["hybrid"]["by_kind"]["multi-hop"]["mrr"] == 0.5
    # context: snippets' characters in the top 1 / top 10, averaged over all three questions
    assert overall["context_chars@1"] == pytest.approx((7 + 3 + 5) / 3, abs=1e-3)
    assert overall["context_chars@10"] == pytest.approx((7 + 3 + 3 + 12) / 3, abs=1e-3)
    unans = report["channels"]["hybrid"]["unanswerable_top_score"]
    assert unans["n"] == 1 and unans["max"] == 0.25
    assert report["channels"]["hybrid"]["answerable_top_score_when_right"]["n"] == 1  # q2 only
    assert report["channels"]["vector"]["notes"] == ["a note"]


def test_injection_estimate_computed_by_hand() -> None:
    """Per threshold: unanswerable questions with a top-5 hit scoring at least it (absolute
    score: 0.7 x share of the question's terms + 0.3 x cosine), answerable ones with a matching
    hit doing so. An episodic hit's own score counts as it is."""
    qs = [
        Question("a", "invoice refund", "support", "exact-code", None, (Expect("a.md", (1, 2)),)),
        Question("u", "wifi password", "support", "unanswerable"),
    ]
    answers = {
        # "invoice refund": the evidence holds both terms (coverage 1) with cosine 0.5 -> 0.85;
        # the other hit holds one term (0.5) with cosine 0.2 -> 0.41
        "a": [
            {**hit("b.md", 1, 2, "refund only", 0.9), "channels": {"vector": 0.2}},
            {**hit("a.md", 1, 2, "invoice and refund", 0.8), "channels": {"vector": 0.5}},
        ],
        # "wifi password": one of two terms (0.5) with cosine 0.3 -> 0.44; an episodic hit at 0.62
        "u": [
            {**hit("c.md", 1, 1, "the password", 0.99), "channels": {"vector": 0.3}},
            {**hit("episodic:x", 0, 0, "", 0.62), "tier": "episodic"},
        ],
    }

    def search(q: Question, channel: str, limit: int) -> tuple[Sequence[Any], Sequence[str]]:
        return answers[q.id], []

    inj = evaluate(None, qs, channels=["hybrid"], search=search).as_json()["channels"]["hybrid"]["injection"]
    assert (inj["top"], inj["unanswerable"], inj["answerable"]) == (5, 1, 1)
    got = {t: (v["false"], v["evidence"]) for t, v in inj["thresholds"].items()}
    assert got == {"0.5": (1, 1), "0.55": (1, 1), "0.6": (1, 1), "0.65": (0, 1), "0.7": (0, 1)}


def test_oracle_scores_one_and_empty_scores_zero() -> None:
    qs = _questions()

    def oracle(q: Question, channel: str, limit: int) -> tuple[Sequence[Any], Sequence[str]]:
        return [hit(e.path or "t.md", *(e.lines or (1, 1)), e.text or "") for e in q.expect], []

    def nothing(q: Question, channel: str, limit: int) -> tuple[Sequence[Any], Sequence[str]]:
        return [], []

    best = evaluate(None, qs, search=oracle).as_json()["channels"]
    worst = evaluate(None, qs, search=nothing).as_json()["channels"]
    for channel in ("lexical", "vector", "hybrid"):
        for key in ("recall@1", "recall@5", "recall@10", "mrr", "ndcg@10"):
            # two pieces of evidence cannot both be in a top 1: q1's recall@1 is 1/2
            assert best[channel]["overall"][key] == (0.75 if key == "recall@1" else 1.0)
            assert worst[channel]["overall"][key] == 0.0
        assert best[channel]["overall"]["hit@1"] == 1.0
        assert worst[channel]["unanswerable_top_score"]["max"] == 0.0


Q = '"id": "x", "question": "q", "agent": "a"'


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ("{" + Q + ', "kind": "fuzzy", "expect": [{"text": "t"}]}', "kind"),
        ("{" + Q + ', "kind": "paraphrase"}', '"expect" must list'),
        ("{" + Q + ', "kind": "unanswerable", "expect": [{"text": "t"}]}', "no"),
        ("{" + Q + ', "kind": "temporal", "expect": [{"lines": [1, 2]}]}', "path"),
        (
            "{" + Q + ', "kind": "temporal", "expect": [{"path": "m", "lines": [3, 2]}]}',
            "1 <= first <= last",
        ),
        ('{"question": "q", "agent": "a", "kind": "temporal"}', '"id" is required'),
        ("[1, 2]", "JSON object"),
    ],
)
def test_bad_question_lines_name_their_line(line: str, message: str) -> None:
    good = '{"id": "g", "question": "q", "agent": "a", "kind": "unanswerable"}'
    with pytest.raises(QuestionsError) as exc:
        parse_questions([good, "", line], "qs.jsonl")
    assert str(exc.value).startswith("qs.jsonl:3: ")
    assert message in str(exc.value)


def test_duplicate_ids_are_refused() -> None:
    good = '{"id": "g", "question": "q", "agent": "a", "kind": "unanswerable"}'
    with pytest.raises(QuestionsError, match="duplicate id 'g' \\(first on line 1\\)"):
        parse_questions([good, good], "qs.jsonl")


def _small_workspace(ws: Path) -> None:
    write(ws, "agents/helper/MEMORY.md", "# Facts\n\nThe loading dock code is DOCK-7781.\n")
    write(
        ws,
        "agents/helper/memory/2026-10-01.md",
        "# 2026-10-01\n\nDecided: the quarterly review moves to Thursdays.\n",
    )
    write(ws, "agents/helper/users/bo/MEMORY.md", "# Bo\n\nBo prefers short answers in French.\n")


def test_cli_eval_on_a_real_workspace(workspace: Path) -> None:
    assert run_cli(["init"], workspace=workspace).code == 0
    assert run_cli(["agent", "create", "helper"], workspace=workspace).code == 0
    _small_workspace(workspace)
    qs = workspace / "qs.jsonl"
    rows = [
        {"id": "1", "question": "DOCK-7781", "agent": "helper", "kind": "exact-code",
         "expect": [{"path": "MEMORY.md", "lines": [3, 3]}]},
        {"id": "2", "question": "what language for Bo", "agent": "helper", "user": "bo",
         "kind": "preference", "expect": [{"text": "French"}]},
        {"id": "3", "question": "zebra migration", "agent": "helper", "kind": "unanswerable"},
    ]  # fmt: skip
    qs.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    result = run_cli(["eval", str(qs), "--index", "--json", "--channel", "lexical"], workspace=workspace)
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert list(data["channels"]) == ["lexical"]
    lexical = data["channels"]["lexical"]["overall"]
    assert lexical["recall@1"] == 1.0 and lexical["mrr"] == 1.0
    assert lexical["context_chars@1"] > 0
    human = run_cli(["eval", str(qs)], workspace=workspace)
    assert human.code == 0 and "hybrid" in human.out and "recall@10" in human.out
    assert "auto-injection (hybrid, top 5, absolute score)" in human.out and "0.6: " in human.out


def test_cli_eval_errors_are_one_line(workspace: Path) -> None:
    assert run_cli(["init"], workspace=workspace).code == 0
    bad = workspace / "bad.jsonl"
    bad.write_text('{"id": "1", "question": "q", "agent": "helper", "kind": "unanswerable"}\n{oops\n')
    result = run_cli(["eval", str(bad)], workspace=workspace)
    assert result.code != 0
    assert result.err.startswith(f"error: {bad}:2: not valid JSON") and result.err.count("\n") == 1
    unknown = workspace / "unknown.jsonl"
    unknown.write_text('{"id": "1", "question": "q", "agent": "nobody", "kind": "unanswerable"}\n')
    result = run_cli(["eval", str(unknown)], workspace=workspace)
    assert result.code != 0 and f"{unknown}:1: unknown agent 'nobody'" in result.err
    missing = run_cli(["eval", str(workspace / "nope.jsonl")], workspace=workspace)
    assert missing.code != 0 and "no such file" in missing.err


def test_any_of_alternatives_count_as_one_piece_of_evidence() -> None:
    line = (
        '{"id": "a", "question": "q", "agent": "s", "kind": "exact-code", "expect": '
        '[{"any": [{"path": "MEMORY.md", "lines": [3, 4]}, {"path": "memory/d.md", "lines": [1, 2]}]}]}'
    )
    (q,) = parse_questions([line])
    assert q.as_json()["expect"] == [
        {"any": [{"path": "MEMORY.md", "lines": [3, 4]}, {"path": "memory/d.md", "lines": [1, 2]}]}
    ]
    m = question_metrics([hit("memory/d.md", 2, 5), hit("MEMORY.md", 1, 3)], q.expect)
    assert m["recall@1"] == 1.0 and m["mrr"] == 1.0
    assert m["ndcg@10"] == 1.0  # the second copy earns nothing more
    with pytest.raises(QuestionsError, match='"any" must be the only key'):
        parse_questions([line.replace('[{"any": [', '[{"text": "x", "any": [')])
