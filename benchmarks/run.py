"""Run every goclaw benchmark and print one table (or one JSON document).

    python benchmarks/run.py --quick          # under 2 minutes, used in review
    python benchmarks/run.py                  # full sizes (minutes; PostgreSQL rows need a server)
    python benchmarks/run.py --quick --json   # one JSON array of rows

With ``--json`` stdout is one JSON array; each row is ``{"name", "value", "unit", "baseline",
"ratio", "baseline_name", "suite"}``; the machine description goes to stderr.

Each ``benchmarks/<feature>_bench.py`` exposes ``run(quick: bool) -> list[dict]``; rows carry
``name``, ``value``, ``unit`` and, where a baseline was measured in the same run,
``baseline`` (its value), ``baseline_name`` and ``ratio`` (for times: baseline ÷ ours, so above
1 means goclaw is faster). PostgreSQL rows run when ``GOCLAW_BENCH_DATABASE_URL`` (or
``GOCLAW_TEST_DATABASE_URL``) is set.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MODULES = [
    "kernel_bench",
    "prompt_bench",
    "skills_bench",
    "memory_bench",
    "retrieval_bench",
    "embedder_bench",
    "consolidation_bench",
]


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
        info["memory_gib"] = round(int(mem) / 1024 / 1024, 1)
    except OSError:
        pass
    return info


def fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, under 2 minutes")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--only", action="append", default=[], help="run only these modules")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    started = time.perf_counter()
    for name in MODULES:
        if args.only and name not in args.only:
            continue
        if not (HERE / f"{name}.py").exists():
            continue
        t0 = time.perf_counter()
        try:
            module = importlib.import_module(name)
            if not hasattr(module, "run"):
                continue
            for row in module.run(quick=args.quick):
                row.setdefault("baseline", None)
                row.setdefault("baseline_name", None)
                row.setdefault("ratio", None)
                row["suite"] = name.removesuffix("_bench")
                rows.append(row)
        except Exception as exc:
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
            if not args.json:
                traceback.print_exc()
        if not args.json:
            print(f"[{name}: {time.perf_counter() - t0:.1f} s]", file=sys.stderr)

    total = time.perf_counter() - started
    if args.json:
        print(json.dumps(rows, indent=2))
        summary = {"machine": machine(), "quick": args.quick, "seconds": round(total, 1), "errors": errors}
        print(json.dumps(summary), file=sys.stderr)
        return 1 if errors else 0
    print(f"goclaw benchmarks ({'quick' if args.quick else 'full'}), {machine()}")
    print()
    print("| benchmark | value | unit | baseline | baseline value | ratio |")
    print("|---|---:|---|---|---:|---:|")
    for r in rows:
        print(
            f"| {r['name']} | {fmt(r['value'])} | {r['unit']} | {r.get('baseline_name') or ''} "
            f"| {fmt(r['baseline'])} | {fmt(r['ratio'])} |"
        )
    print(f"\n{len(rows)} rows in {total:.1f} s")
    for err in errors:
        print(f"ERROR {err}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
