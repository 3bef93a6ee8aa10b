"""Cold start of two goclaw installs, side by side: a fresh process imports goclaw, opens a
workspace (``Engine.open``) and runs its first hybrid memory search. Processes alternate between
the two, after one warm-up round (bytecode written, pages cached); the medians of each phase's
CPU time (``time.process_time``) and of the whole process's wall time are printed as a Markdown
table.

Each side is a Python interpreter with goclaw installed (best from a wheel: an editable
install's import hook costs every import a little) and a workspace that goclaw indexed itself,
for instance one ``retrieval_bench.py`` builds (``synth_memory.generate``)::

    python benchmarks/cold_start.py --python venv-a/bin/python --workspace ws-a \\
        --baseline-python venv-b/bin/python --baseline-workspace ws-b --agent bench

``--gc`` also counts the full garbage collections (generation 2) that run during each phase.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

PROBE = r"""
import gc, json, sys, time
full = []
gc.callbacks.append(lambda phase, info: full.append(time.process_time())
                    if phase == "start" and info["generation"] == 2 else None)
c0, t0 = time.process_time(), time.perf_counter()
import goclaw
from goclaw.engine import Engine
c1 = time.process_time()
eng = Engine.open(sys.argv[1])
c2 = time.process_time()
eng.memory.search_response(sys.argv[3], sys.argv[2], limit=10, include_extra=False)
c3, t3 = time.process_time(), time.perf_counter()
eng.close()
n = lambda a, b: sum(1 for c in full if a <= c < b)
print(json.dumps({"import": c1 - c0, "open": c2 - c1, "search": c3 - c2, "cpu": c3,
                  "wall": t3 - t0, "gc": [n(c0, c1), n(c1, c2), n(c2, c3)]}))
"""


def _run(python: str, workspace: str, agent: str, query: str) -> dict[str, object]:
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", HF_HUB_OFFLINE="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    out = subprocess.run(
        [python, "-c", PROBE, workspace, agent, query], capture_output=True, text=True, env=env
    )
    if out.returncode != 0:
        tail = out.stderr.strip().splitlines()[-1:] or ["no output"]
        raise SystemExit(f"cold start failed ({python}): {tail[0]}")
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--baseline-python", required=True)
    ap.add_argument("--baseline-workspace", required=True)
    ap.add_argument("--agent", default="bench")
    ap.add_argument("--query", default="printer outage")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--gc", action="store_true", help="also count full garbage collections per phase")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    sides = {
        "this": (args.python, args.workspace),
        "baseline": (args.baseline_python, args.baseline_workspace),
    }
    got: dict[str, list[dict[str, object]]] = {name: [] for name in sides}
    for round_ in range(args.rounds + 1):  # round 0 warms up
        for name, (python, ws) in sides.items():
            result = _run(python, ws, args.agent, args.query)
            if round_:
                got[name].append(result)

    def med(name: str, key: str) -> float:
        return statistics.median(float(r[key]) * 1000 for r in got[name])  # type: ignore[arg-type]

    print(f"| median of {args.rounds} rounds, ms | this | baseline | this ÷ baseline |")
    print("| --- | ---: | ---: | ---: |")
    for key, label in (
        ("import", "CPU, import"),
        ("open", "CPU, Engine.open"),
        ("search", "CPU, first search"),
        ("cpu", "CPU, whole process"),
        ("wall", "wall, whole process"),
    ):
        a, b = med("this", key), med("baseline", key)
        print(f"| {label} | {a:,.0f} | {b:,.0f} | {a / b:.2f} |")
    if args.gc:
        for name in sides:
            counts = [r["gc"] for r in got[name]]
            print(f"\nfull collections (import, open, search) per round, {name}: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
