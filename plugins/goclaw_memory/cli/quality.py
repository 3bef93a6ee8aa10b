"""``goclaw eval`` and ``goclaw memory doctor``: measure retrieval, check the index.

The harness is :mod:`goclaw_memory.evaluation` (imported inside the command so
that ``goclaw --help`` stays fast); the doctor is the memory service's (``engine.memory.doctor``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from goclaw.contracts.cli import emit_json, engine, json_option

KIND_CHOICES = ("exact-code", "partial", "paraphrase", "temporal", "multi-hop", "preference", "unanswerable")


def _fmt(value: float) -> str:
    return f"{value:.3f}"


def _print_report(data: dict[str, Any]) -> None:
    ks = data["ks"]
    click.echo(
        f"{data['questions']} questions ({data['answerable']} answerable, "
        f"{data['unanswerable']} unanswerable); top k = first k of the top {max(max(ks), 10)}"
    )
    head = [f"recall@{k}" for k in ks] + ["MRR", "nDCG@10", f"ctx@{ks[-1]}", "ms/q"]
    click.echo("")
    click.echo(f"{'channel':<10}{'kind':<14}{'n':>4}" + "".join(f"{h:>11}" for h in head))
    for channel, summary in data["channels"].items():
        rows = [("all", summary["overall"]), *summary["by_kind"].items()]
        for kind, m in rows:
            if kind == "unanswerable":
                continue
            cells = [_fmt(m[f"recall@{k}"]) for k in ks] + [_fmt(m["mrr"]), _fmt(m["ndcg@10"])]
            cells += [f"{m[f'context_chars@{ks[-1]}']:.0f}"]
            cells += [f"{summary['ms_per_query']:.1f}" if kind == "all" else ""]
            click.echo(f"{channel:<10}{kind:<14}{int(m['n']):>4}" + "".join(f"{c:>11}" for c in cells))
    click.echo("")
    click.echo("top-1 score, unanswerable vs answerable-and-right (median / p90 / max):")
    for channel, summary in data["channels"].items():
        u, a = summary["unanswerable_top_score"], summary["answerable_top_score_when_right"]
        click.echo(
            f"  {channel:<8} unanswerable {u['median']:.3f} / {u['p90']:.3f} / {u['max']:.3f}   "
            f"answerable {a['median']:.3f} / {a['p90']:.3f} / {a['max']:.3f}"
        )
    if "hybrid" in data["channels"]:
        inj = data["channels"]["hybrid"]["injection"]
        click.echo("")
        click.echo(
            f"auto-injection (hybrid, top {inj['top']}, absolute score): false injections of "
            f"{inj['unanswerable']} unanswerable / evidence injected of {inj['answerable']} answerable"
        )
        cells = [f"{t}: {v['false']} / {v['evidence']}" for t, v in inj["thresholds"].items()]
        click.echo("  " + "   ".join(cells))
    for channel, summary in data["channels"].items():
        for note in summary["notes"]:
            click.echo(f"note: {channel}: {note}", err=True)


@click.command("eval")
@click.argument("questions", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--channel",
    "channels",
    type=click.Choice(["lexical", "vector", "hybrid"]),
    multiple=True,
    help="Channel(s) to measure (repeatable; default: all three).",
)
@click.option("--kind", "kinds", type=click.Choice(KIND_CHOICES), multiple=True, help="Only these kinds.")
@click.option("--k", "ks", type=click.IntRange(1, 100), multiple=True, help="Cut-offs (default 1, 5, 10).")
@click.option("--index", "index_first", is_flag=True, help="Index the questions' agents first.")
@click.option("--details", is_flag=True, help="With --json: every question's metrics and hits.")
@json_option
def eval_command(
    questions: Path,
    channels: tuple[str, ...],
    kinds: tuple[str, ...],
    ks: tuple[int, ...],
    index_first: bool,
    details: bool,
    as_json: bool,
) -> None:
    """Measure memory retrieval on labelled questions (JSONL; see docs/eval.md).

    Reports recall@k, MRR and nDCG@10 per channel (lexical, vector, hybrid) and per kind of
    question, the context size returned, and the top scores of unanswerable questions.
    """
    from goclaw_memory.evaluation import CHANNELS, KS, evaluate, load_questions

    items = load_questions(questions)
    if kinds:
        items = [q for q in items if q.kind in kinds]
        if not items:
            raise click.UsageError(f"no questions of kind {', '.join(kinds)} in {questions}")
    eng = engine()
    known = {a.name for a in eng.agents.list()}
    for q in items:
        if q.agent not in known:
            from goclaw.errors import NotFoundError

            raise NotFoundError(f"{q.source}: unknown agent {q.agent!r}")
    if index_first:
        for name in sorted({q.agent for q in items}):
            eng.memory.index(name)
    report = evaluate(eng, items, channels=channels or CHANNELS, ks=ks or KS, keep_hits=details)
    data = report.as_json(details=details and as_json)
    if as_json:
        emit_json(data)
    else:
        _print_report(data)


@click.command("doctor")
@click.option("--agent", "-a", default=None, help="Agent name (default: every agent).")
@click.option(
    "--repair", is_flag=True, help="Fix what no other command fixes (see docs/eval.md), then check."
)
@json_option
def memory_doctor(agent: str | None, repair: bool, as_json: bool) -> None:
    """Check each memory channel and say what to run: index freshness, embedding space,
    full-text integrity, vector counts, HNSW indexes (PostgreSQL), the watcher.

    Exits 1 when a problem is found.
    """
    eng = engine()
    report = eng.memory.doctor(agent, repair=repair)
    if as_json:
        emit_json(report.as_json())
    else:
        for line in report.repaired:
            click.echo(f"repaired: {line}")
        for check in report.checks:
            mark = {"ok": "ok  ", "problem": "FAIL", "warning": "warn", "info": "info"}[check.status]
            who = f" ({check.agent})" if check.agent else ""
            click.echo(f"[{mark}] {check.name}{who}: {check.message}")
            if check.fix:
                click.echo(f"       fix: {check.fix}")
        problems = sum(1 for c in report.checks if c.status == "problem")
        click.echo(f"{problems} problem(s) found" if problems else "no problems found")
    if report.problems:
        sys.exit(1)
