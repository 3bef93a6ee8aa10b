"""The memory evaluation harness: labelled questions in, retrieval quality out.

A question file is JSONL, one question a line::

    {"id": "q1", "question": "what did we agree on TCK-4471?", "agent": "support", "user": "ada",
     "kind": "exact-code", "expect": [{"path": "MEMORY.md", "lines": [34, 38]}, {"text": "re_3QxT7mK2Lp9"}]}

``kind`` is one of :data:`KINDS`; an ``unanswerable`` question has no ``expect`` (nothing in
memory answers it: it measures what would be injected anyway). An expect item is evidence:
``{"path", "lines": [a, b]}`` matches a hit of the same path (relative to the agent folder, as
search hits report it, e.g. ``users/ada/MEMORY.md``) whose line range overlaps ``a..b``;
``{"text"}`` matches a hit whose snippet contains the text (case and runs of white space
ignored). An item may carry both a path and a text; then both must hold. When the same
evidence is written in several places, ``{"any": [item, item, ...]}`` matches any of them (and
still counts as one piece of evidence).

Each channel (``lexical``, ``vector``, ``hybrid``) is asked every question once through
``engine.memory.search(query, agent, user, limit=max(ks), channel=...)``; the top k are the first
k hits of that list. Metrics, averaged over the answerable questions:

* ``recall@k``: the share of a question's expect items matched by at least one of the top k;
* ``hit@k``: 1 when any expect item is matched in the top k (the issue's hit@10);
* ``mrr``: 1 / rank of the first matching hit within the returned list (0 when none);
* ``ndcg@10``: binary gains, a hit counts when it matches an expect item no higher hit matched
  already; the ideal ranks all expect items first.

``context_chars@k`` is the mean number of snippet characters the top k return (every
question). For unanswerable questions the distribution of the top hit's score is reported
beside the same for answerable ones.

``injection`` estimates auto-injection (the Memory Context section) per threshold of its
absolute score (:mod:`goclaw_search.answer`; ``auto_inject_document_threshold`` and
``auto_inject_threshold``): how many unanswerable questions have a hit among the top
:data:`INJECT_TOP` scoring at least the threshold (a false injection), and how many answerable
ones have a hit matching their evidence there. Memory-file hits are scored from their terms and
cosine; an episodic hit's own score is already on that scale. The section itself also holds to
a character budget, so it injects fewer hits than this counts.

Plain module: no click and no pluggy; :func:`evaluate` works on an open engine or on any
``search`` callable (which is how the harness itself is tested).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from goclaw.errors import ValidationError
from goclaw_memory.questions import KINDS, Expect, Question

# Re-exported, so code that imports the question-file readers from this module keeps working.
from goclaw_memory.questions import QuestionsError as QuestionsError
from goclaw_memory.questions import load_questions as load_questions
from goclaw_memory.questions import parse_question as parse_question
from goclaw_memory.questions import parse_questions as parse_questions
from goclaw_search.answer import answer_scores

CHANNELS = ("lexical", "vector", "hybrid")
KS = (1, 5, 10)
NDCG_K = 10
INJECT_TOP = 5  # hits the Memory Context section considers (auto_inject_max_items)
INJECT_THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7)

# search(question, channel, limit) -> (hits, notes); hits are objects or dicts with path,
# start_line, end_line, score and snippet.
SearchFn = Callable[["Question", str, int], "tuple[Sequence[Any], Sequence[str]]"]


# --------------------------------------------------------------------------- matching and metrics


def _field(hit: Any, name: str, default: Any = None) -> Any:
    if isinstance(hit, dict):
        return hit.get(name, default)
    return getattr(hit, name, default)


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def matches(hit: Any, expect: Expect) -> bool:
    """Whether a search hit is this piece of evidence (see the module docstring)."""
    if expect.any_of:
        return any(matches(hit, e) for e in expect.any_of)
    if expect.path is not None:
        if (_field(hit, "path") or "") != expect.path:
            return False
        if expect.lines is not None:
            start = int(_field(hit, "start_line", 0) or 0)
            end = int(_field(hit, "end_line", 0) or 0)
            if end < expect.lines[0] or start > expect.lines[1]:
                return False
    if expect.text is not None:
        return _norm(expect.text) in _norm(_field(hit, "snippet", "") or "")
    return True


def question_metrics(
    hits: Sequence[Any], expect: Sequence[Expect], ks: Sequence[int] = KS
) -> dict[str, float]:
    """recall@k, hit@k, MRR and nDCG@10 of one ranked hit list against its evidence."""
    found_at: list[int | None] = []  # per expect item: rank (1-based) of the first hit matching it
    for e in expect:
        rank = next((i + 1 for i, h in enumerate(hits) if matches(h, e)), None)
        found_at.append(rank)
    out: dict[str, float] = {}
    n = len(expect)
    for k in ks:
        got = sum(1 for r in found_at if r is not None and r <= k)
        out[f"recall@{k}"] = got / n if n else 0.0
        out[f"hit@{k}"] = 1.0 if got else 0.0
    first = min((r for r in found_at if r is not None), default=None)
    out["mrr"] = 1.0 / first if first else 0.0
    credited: set[int] = set()
    dcg = 0.0
    for i, h in enumerate(hits[:NDCG_K]):
        new = next((j for j, e in enumerate(expect) if j not in credited and matches(h, e)), None)
        if new is not None:
            credited.add(new)
            dcg += 1.0 / math.log2(i + 2)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(n, NDCG_K)))
    out[f"ndcg@{NDCG_K}"] = dcg / ideal if ideal else 0.0
    return out


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    pos = (len(sorted_values) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    value = sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)
    return round(value, 4)


def score_distribution(scores: Sequence[float]) -> dict[str, float]:
    """count, min, p25, median, p75, p90, max and mean of a list of scores."""
    s = sorted(float(x) for x in scores)
    return {
        "n": len(s),
        "min": round(s[0], 4) if s else 0.0,
        "p25": _quantile(s, 0.25),
        "median": _quantile(s, 0.5),
        "p75": _quantile(s, 0.75),
        "p90": _quantile(s, 0.9),
        "max": round(s[-1], 4) if s else 0.0,
        "mean": _mean(s),
    }


# --------------------------------------------------------------------------- running


@dataclass
class QuestionResult:
    question: Question
    channel: str
    metrics: dict[str, float]
    top_score: float
    context_chars: dict[int, int]
    hits: list[dict[str, Any]] = field(default_factory=list)
    # (absolute answer score, matches an expect item) of each of the top INJECT_TOP hits
    answers: list[tuple[float, bool]] = field(default_factory=list)


@dataclass
class EvalReport:
    """What :func:`evaluate` measured; :meth:`as_json` is the ``goclaw eval --json`` document."""

    channels: list[str]
    ks: tuple[int, ...]
    results: list[QuestionResult]
    notes: dict[str, list[str]]
    seconds: dict[str, float]

    def _summary(self, rows: Sequence[QuestionResult]) -> dict[str, float]:
        answerable = [r for r in rows if r.question.kind != "unanswerable"]
        out: dict[str, float] = {"n": len(answerable)}
        keys = [f"recall@{k}" for k in self.ks] + [f"hit@{k}" for k in self.ks] + ["mrr", f"ndcg@{NDCG_K}"]
        for key in keys:
            out[key] = _mean([r.metrics[key] for r in answerable])
        for k in self.ks:
            out[f"context_chars@{k}"] = _mean([float(r.context_chars[k]) for r in rows])
        return out

    def channel_summary(self, channel: str) -> dict[str, Any]:
        rows = [r for r in self.results if r.channel == channel]
        by_kind = {
            kind: self._summary([r for r in rows if r.question.kind == kind])
            for kind in KINDS
            if any(r.question.kind == kind for r in rows)
        }
        unanswerable = [r.top_score for r in rows if r.question.kind == "unanswerable"]
        answered = [r.top_score for r in rows if r.question.kind != "unanswerable" and r.metrics["hit@1"]]
        queries = len(rows)
        return {
            "overall": self._summary(rows),
            "by_kind": by_kind,
            "unanswerable_top_score": score_distribution(unanswerable),
            "answerable_top_score_when_right": score_distribution(answered),
            "injection": injection(rows),
            "ms_per_query": round(1000 * self.seconds.get(channel, 0.0) / queries, 2) if queries else 0.0,
            "notes": self.notes.get(channel, []),
        }

    def as_json(self, details: bool = False) -> dict[str, Any]:
        questions = {r.question.id: r.question for r in self.results}.values()
        out: dict[str, Any] = {
            "questions": len(questions),
            "answerable": sum(1 for q in questions if q.kind != "unanswerable"),
            "unanswerable": sum(1 for q in questions if q.kind == "unanswerable"),
            "ks": list(self.ks),
            "channels": {c: self.channel_summary(c) for c in self.channels},
        }
        if details:
            out["details"] = [
                {
                    "id": r.question.id,
                    "kind": r.question.kind,
                    "channel": r.channel,
                    **r.metrics,
                    "top_score": round(r.top_score, 4),
                    "hits": r.hits,
                }
                for r in self.results
            ]
        return out


def injection(rows: Sequence[QuestionResult]) -> dict[str, Any]:
    """Per threshold: false injections (unanswerable questions with a top hit at or above it)
    and evidence injections (answerable questions with a matching top hit at or above it)."""
    unanswerable = [r for r in rows if r.question.kind == "unanswerable"]
    answerable = [r for r in rows if r.question.kind != "unanswerable"]
    return {
        "top": INJECT_TOP,
        "unanswerable": len(unanswerable),
        "answerable": len(answerable),
        "thresholds": {
            f"{t:g}": {
                "false": sum(1 for r in unanswerable if any(a >= t for a, _ok in r.answers)),
                "evidence": sum(1 for r in answerable if any(a >= t and ok for a, ok in r.answers)),
            }
            for t in INJECT_THRESHOLDS
        },
    }


def _answers(question: Question, hits: Sequence[Any]) -> list[tuple[float, bool]]:
    """(absolute answer score, matches evidence) of the top hits: memory-file hits scored from
    their terms and cosine together, an episodic hit by its own (already absolute) score."""
    top = list(hits[:INJECT_TOP])
    documents = [h for h in top if (_field(h, "tier", "document") or "document") == "document"]
    scored = dict(zip(map(id, documents), answer_scores(question.question, documents), strict=True))
    out = []
    for h in top:
        score = scored[id(h)] if id(h) in scored else float(_field(h, "score", 0.0) or 0.0)
        out.append((score, any(matches(h, e) for e in question.expect)))
    return out


def engine_search(engine: Any) -> SearchFn:
    """The default search: ``engine.memory`` (with its notes when the service gives them)."""
    memory = engine.memory

    def _search(q: Question, channel: str, limit: int) -> tuple[Sequence[Any], Sequence[str]]:
        response = getattr(memory, "search_response", None)
        if response is not None:
            r = response(q.question, q.agent, q.user, limit=limit, channel=channel)
            return r.hits, list(getattr(r, "notes", []) or [])
        return memory.search(q.question, q.agent, q.user, limit=limit, channel=channel), []

    return _search


def evaluate(
    engine: Any,
    questions: Sequence[Question],
    *,
    channels: Sequence[str] = CHANNELS,
    ks: Sequence[int] = KS,
    search: SearchFn | None = None,
    keep_hits: bool = False,
) -> EvalReport:
    """Ask every question on every channel and score the answers.

    ``engine``: an open :class:`goclaw.Engine` (ignored when ``search`` is given).
    ``search(question, channel, limit) -> (hits, notes)`` replaces the engine's search.
    ``keep_hits``: keep each question's hits (path, lines, score) for :meth:`EvalReport.as_json`
    ``details``.
    """
    bad = [c for c in channels if c not in CHANNELS]
    if bad or not channels:
        raise ValidationError(f"unknown channel(s) {', '.join(bad) or '(none)'}: use {', '.join(CHANNELS)}")
    ks_t = tuple(sorted({int(k) for k in ks}))
    if not ks_t or ks_t[0] < 1:
        raise ValidationError("every k must be at least 1")
    run = search or engine_search(engine)
    limit = max(ks_t[-1], NDCG_K)
    results: list[QuestionResult] = []
    notes: dict[str, list[str]] = {}
    seconds: dict[str, float] = {}
    for channel in channels:
        started = time.perf_counter()
        seen_notes: list[str] = []
        for q in questions:
            hits, q_notes = run(q, channel, limit)
            hits = list(hits)[:limit]
            for n in q_notes:
                if n not in seen_notes:
                    seen_notes.append(n)
            metrics = question_metrics(hits, q.expect, ks_t) if q.expect else {}
            if not q.expect:
                metrics = {key: 0.0 for key in question_metrics([], (Expect(text="-"),), ks_t)}
            sizes = {k: sum(len(_field(h, "snippet", "") or "") for h in hits[:k]) for k in ks_t}
            top = float(_field(hits[0], "score", 0.0) or 0.0) if hits else 0.0
            kept = (
                [
                    {
                        "path": _field(h, "path"),
                        "lines": [_field(h, "start_line"), _field(h, "end_line")],
                        "score": round(float(_field(h, "score", 0.0) or 0.0), 4),
                    }
                    for h in hits
                ]
                if keep_hits
                else []
            )
            results.append(QuestionResult(q, channel, metrics, top, sizes, kept, _answers(q, hits)))
        seconds[channel] = time.perf_counter() - started
        notes[channel] = seen_notes
    return EvalReport(list(channels), ks_t, results, notes, seconds)
