#!/usr/bin/env python3
"""Benchmark the warm system-prompt build.

    python benchmarks/prompt_bench.py [--quick] [--skills 20] [--postgres URL]

Set-up: an open agent with 13 context files populated (10 stored: the standard files plus extras,
large enough that truncation works; 3 virtual: DELEGATION.md with 5 targets, TEAM.md, and a
plugin-free AVAILABILITY.md check), ``--skills`` workspace skills, and a user whose files exist.

Rows (medians):
  * warm build: ``engine.prompt.build(...)`` again and again on one engine (caches warm);
  * baseline "uncached build": the same with ``[plugins.context_files] cache_seconds = 0`` (every
    build re-reads agent, files, links and teams from the database, as an uncached engine would);
  * SQL statements and file opens during one warm build (both should be 0: no database round
    trips and no disk rescans).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_rows import row

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "plugins")]

_counting = {"open": 0, "on": False}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _counting["on"] and event == "open":
        _counting["open"] += 1


WORDS = [
    "agent",
    "memory",
    "rule",
    "prefer",
    "tone",
    "safety",
    "user",
    "tool",
    "note",
    "careful",
    "brief",
    "clear",
    "always",
    "never",
]


def _para(seed: int, n: int) -> str:
    out, length, i = [], 0, seed
    while length < n:
        word = WORDS[i % len(WORDS)]
        out.append(word)
        length += len(word) + 1
        i = i * 7 + 3
    return " ".join(out)[:n]


def others_disabled() -> list[str]:
    """Built-ins that contribute other features' sections (skills, memory, consolidation)."""
    from goclaw.plugins import builtin_plugins

    prefixes = (
        "goclaw.skills",
        "goclaw.slash",
        "goclaw.memory",
        "goclaw.episodic",
        "goclaw.kg",
        "goclaw.channel_memory",
        "goclaw.workers",
    )
    return sorted(n for n in builtin_plugins() if n.startswith(prefixes))


def setup(
    workspace: Path, database_url: str | None, skills: int, cache_seconds: float, only_ours: bool = False
) -> Any:
    from goclaw.engine import Engine

    for i in range(skills):
        d = workspace / "skills" / f"skill-{i:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "SKILL.md").write_text(
            f"---\nname: skill-{i:03d}\ndescription: Does task number {i} for the user.\n---\n\n"
            f"# Skill {i}\n",
            encoding="utf-8",
        )
    plugins: dict[str, Any] = {"context_files": {"cache_seconds": cache_seconds}}
    if only_ours:
        plugins["disable"] = others_disabled()
    eng = Engine.open(workspace, database_url, plugins=plugins)
    try:
        eng.agents.get("bench")
        return eng
    except Exception:
        pass
    eng.agents.create("bench", "open", description="benchmark agent")
    sizes = {
        "AGENTS.md": 6000, "SOUL.md": 3000, "TOOLS.md": 2500, "IDENTITY.md": 600, "USER.md": 900,
        "CAPABILITIES.md": 1500, "HEARTBEAT.md": 800, "VOICE.md": 1200, "PROJECTS.md": 2000,
    }  # fmt: skip
    for n, (name, size) in enumerate(sizes.items()):
        eng.files.set("bench", name, f"# {name}\n" + _para(n, size), user="u")
    eng.files.set("bench", "USER_PREDEFINED.md", "# USER_PREDEFINED.md\n" + _para(99, 700))
    for i in range(5):
        eng.agents.create(f"peer{i}", "open", description=f"peer number {i}")
        eng.agents.link("bench", f"peer{i}", f"tasks of kind {i}")
    eng.agents.create_team("crew", "the benchmark crew")
    eng.agents.add_to_team("crew", "bench", "lead")
    eng.agents.add_to_team("crew", "peer0", "helper")
    return eng


def measure(eng: Any, repeats: int) -> tuple[float, dict[str, Any]]:
    from goclaw.contracts.hooks import PromptRequest, ToolInfo

    req = PromptRequest(
        agent="bench", user="u", tools=(ToolInfo("read_file", "read"), ToolInfo("spawn", "sub-agent")),
        channel="cli", message="hello there",
    )  # fmt: skip
    result = eng.prompt.build(req)  # warm up: seeding check, caches, skill loader
    eng.prompt.build(req)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        eng.prompt.build(req)
        times.append(time.perf_counter() - t0)
    info = {
        "files": len(result.files),
        "sections": [s["name"] for s in result.sections],
        "skills_mode": result.skills_mode,
        "prompt_chars": len(result.prompt),
    }
    return statistics.median(times) * 1000, info


OTHER_PLUGINS = (
    "goclaw_skills",
    "goclaw_memory",
    "goclaw_episodic",
    "goclaw_kg",
    "goclaw_channel_memory",
    "goclaw_embeddings",
)


def count_io(eng: Any) -> tuple[int, int, int]:
    """(SQL statements issued by the bootstrap/prompt/virtual-file code, by other plugins'
    sections, file opens) during one warm build."""
    from sqlalchemy import event

    from goclaw.contracts.hooks import PromptRequest

    counts = {"ours": 0, "others": 0}

    def _count(*_a: Any, **_k: Any) -> None:
        frame, files = sys._getframe(), []
        while frame is not None:  # no traceback module: it would open source files
            files.append(frame.f_code.co_filename)
            frame = frame.f_back
        stack = " ".join(files)
        counts["others" if any(p in stack for p in OTHER_PLUGINS) else "ours"] += 1

    req = PromptRequest(agent="bench", user="u", message="hello there")
    eng.prompt.build(req)
    event.listen(eng.db.engine, "before_cursor_execute", _count)
    _counting.update(open=0, on=True)
    eng.prompt.build(req)
    _counting["on"] = False
    event.remove(eng.db.engine, "before_cursor_execute", _count)
    return counts["ours"], counts["others"], _counting["open"]


def run(quick: bool, skills: int = 20, postgres: str | None = None) -> list[dict[str, Any]]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    sys.addaudithook(_audit)
    repeats = 200 if quick else 2000
    rows: list[dict[str, Any]] = []
    backends = [("sqlite", None)] + ([("postgresql", postgres)] if postgres else [])
    for label, url in backends:
        with tempfile.TemporaryDirectory() as tmp:
            ws = Path(tmp)
            cold = setup(ws, url, skills, cache_seconds=0)
            base_ms, _ = measure(cold, max(50, repeats // 10))
            cold.close()
            warm = setup(ws, url, skills, cache_seconds=5)
            warm_ms, info = measure(warm, repeats)
            ours, others, opens = count_io(warm)
            warm.close()
            mine = setup(ws, url, skills, cache_seconds=5, only_ours=True)
            mine_ms, _ = measure(mine, repeats)
            mine.close()
        tag = f"{label}, {info['files']} files, {skills} skills (skills_mode={info['skills_mode']})"
        rows.append(
            row(f"warm prompt build [{tag}]", warm_ms, "ms", base_ms, "uncached build (cache_seconds=0)")
        )
        rows.append(
            row(f"warm prompt build, skills/memory plugins disabled [{label}]", mine_ms, "ms", base_ms,
                "uncached build (cache_seconds=0)")
        )  # fmt: skip
        rows.append(row(f"SQL statements per warm build, bootstrap+prompt code [{label}]", ours, "count"))
        rows.append(row(f"SQL statements per warm build, other plugins' sections [{label}]", others, "count"))
        rows.append(row(f"file opens per warm build [{label}]", opens, "count"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--skills", type=int, default=20)
    ap.add_argument("--postgres", default=os.environ.get("GOCLAW_BENCH_POSTGRES_URL"))
    args = ap.parse_args()
    rows = run(args.quick, args.skills, args.postgres)
    print("| benchmark | value | unit | baseline | baseline name | ratio |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        cells = [r["name"], r["value"], r["unit"], r["baseline"], r["baseline_name"], r["ratio"]]
        print("| " + " | ".join(str(c) for c in cells) + " |")


if __name__ == "__main__":
    main()
