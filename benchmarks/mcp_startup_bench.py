"""Start-up of ``goclaw mcp`` over stdio, as a client sees it.

On a small workspace (agent ``ada``, user ``u1``, a few memory files, indexed), each trial starts
``goclaw mcp --agent ada --user u1`` with the official SDK's client and times, from the spawn:

* ``initialize`` — until the ``initialize`` answer arrives (the client's ``__aenter__``);
* ``tools/list`` — until the first listing after it has arrived;

then, after ``--pause`` seconds (a client waiting for its user; default 0), the duration of

* ``first prompt`` — the first ``system_prompt`` (the first prompt build), and
* ``second prompt`` — the same again.

Medians in milliseconds over the trials: wall-clock time, and ``cpu`` — the CPU time the server
process had used by then (user + system, from ``/proc``; steady on a loaded machine, where the
wall-clock time is not). The server runs with bytecode caches written (as an installed package
has them), whatever ``PYTHONDONTWRITEBYTECODE`` says.

    .venv/bin/python benchmarks/mcp_startup_bench.py [--trials 7] [--pause 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

FACTS = {
    "MEMORY.md": "# Memory\n\nThe vault code is kept by Gutenberg.\n",
    "users/u1/memory/2026-01-01.md": "u1 parks in spot 42.\n\nu1 prefers oolong tea.\n",
}


def _goclaw() -> str:
    exe = Path(sys.executable).parent / "goclaw"
    return str(exe) if exe.exists() else shutil.which("goclaw") or "goclaw"


def seed(ws: Path) -> None:
    from goclaw.engine import Engine

    with Engine.open(ws) as eng:
        eng.agents.create("ada")
        agent_dir = eng.agent_dir(eng.agents.get("ada"))
        for rel, text in FACTS.items():
            (agent_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (agent_dir / rel).write_text(text, encoding="utf-8")
        eng.memory.index()


def _server_cpu_ms() -> float:
    """CPU time (user + system) used so far by this process's children (the server)."""
    total = 0
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
    return total * 1000 / os.sysconf("SC_CLK_TCK")


def trial(ws: Path, env: dict[str, str], pause: float = 0.0) -> dict[str, float]:
    import asyncio

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=_goclaw(), args=["-w", str(ws), "mcp", "--agent", "ada", "--user", "u1"], env=env
    )
    out: dict[str, float] = {}

    async def main() -> None:
        start = time.perf_counter()

        def lap(name: str) -> None:
            out[name] = (time.perf_counter() - start) * 1000
            out[f"{name} cpu"] = _server_cpu_ms()

        async with Client(params) as client:
            lap("initialize")
            await client.list_tools()
            lap("tools/list")
            await asyncio.sleep(pause)
            for name in ("first prompt", "second prompt"):
                began, cpu = time.perf_counter(), _server_cpu_ms()
                await client.get_prompt("system_prompt", {})
                out[name] = (time.perf_counter() - began) * 1000
                out[f"{name} cpu"] = _server_cpu_ms() - cpu

    asyncio.run(main())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=7)
    parser.add_argument("--pause", type=float, default=0.0, help="seconds before the first prompt")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        home.mkdir()
        env = {**os.environ, "HOME": str(home), "HF_HUB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ.update({"HOME": str(home)})
        seed(ws)
        trial(ws, env)  # warm the OS file cache and write the bytecode caches
        runs = [trial(ws, env, args.pause) for _ in range(args.trials)]
    medians = {k: round(statistics.median(r[k] for r in runs), 1) for k in runs[0]}
    if args.json:
        print(json.dumps({"trials": args.trials, "pause": args.pause, "median_ms": medians}))
        return
    print(f"goclaw mcp start-up over stdio, median of {args.trials} trials, pause {args.pause} s (ms)")
    print(f"  {'':<14} {'wall':>8} {'cpu':>8}")
    for name in [k for k in medians if not k.endswith(" cpu")]:
        print(f"  {name:<14} {medians[name]:>8.1f} {medians[name + ' cpu']:>8.1f}")


if __name__ == "__main__":
    main()
