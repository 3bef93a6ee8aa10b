"""Per-turn latency through each surface, side by side.

On the quickstart workspace (``examples/quickstart``, set up by its ``run.sh``), for agent
``support`` and user ``ada``: the system-prompt build and a memory search through

* the Python API (``Engine`` in process) — the reference;
* the HTTP API (``goclaw serve``, one keep-alive ``httpx`` connection);
* MCP over stdio (``goclaw mcp`` with the official SDK's client, one session);
* the CLI (``goclaw prompt`` / ``goclaw memory search``: a process per call).

Medians in milliseconds; ``ratio`` = Python API ÷ surface (below 1: slower than in process).

    .venv/bin/python benchmarks/surfaces_bench.py [--quick] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_rows import row

ROOT = Path(__file__).resolve().parents[1]
AGENT, USER = "support", "ada"
MESSAGE = "A merchant asks why their UPS label failed to print"
QUERY = "label printing failure UPS"


def _goclaw() -> str:
    exe = Path(sys.executable).parent / "goclaw"
    return str(exe) if exe.exists() else shutil.which("goclaw") or "goclaw"


def _median_ms(fn: Callable[[], Any], n: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


async def _amedian_ms(fn: Callable[[], Any], n: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        await fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def setup(ws: Path) -> None:
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", HF_HUB_OFFLINE="1")
    subprocess.run(
        ["bash", str(ROOT / "examples" / "quickstart" / "run.sh"), _goclaw(), str(ws)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def python_api(ws: Path, n: int) -> dict[str, float]:
    from goclaw.contracts.hooks import PromptRequest
    from goclaw.engine import Engine

    with Engine.open(ws) as eng:
        request = PromptRequest(agent=AGENT, user=USER, message=MESSAGE)
        return {
            "prompt": _median_ms(lambda: eng.prompt.build(request), n),
            "search": _median_ms(lambda: eng.memory.search_response(QUERY, AGENT, USER), n),
        }


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_api(ws: Path, n: int) -> dict[str, float]:
    import httpx

    port = _port()
    proc = subprocess.Popen(
        [_goclaw(), "-w", str(ws), "serve", "--no-auth", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(base + "/health", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("goclaw serve did not start") from None
                time.sleep(0.1)
        with httpx.Client(base_url=base) as c:
            body = {"agent": AGENT, "user": USER, "message": MESSAGE}
            search = {"agent": AGENT, "user": USER, "query": QUERY}
            return {
                "prompt": _median_ms(lambda: c.post("/prompt", json=body).raise_for_status(), n),
                "search": _median_ms(lambda: c.post("/memory/search", json=search).raise_for_status(), n),
            }
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def mcp_stdio(ws: Path, n: int) -> dict[str, float]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=_goclaw(),
        args=["-w", str(ws), "mcp", "--agent", AGENT, "--user", USER],
        env=dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", HF_HUB_OFFLINE="1"),
    )

    async def main() -> dict[str, float]:
        async with Client(params) as client:

            async def prompt() -> None:
                await client.get_prompt("system_prompt", {"message": MESSAGE})

            async def search() -> None:
                res = await client.call_tool("memory_search", {"query": QUERY})
                assert not res.is_error

            return {"prompt": await _amedian_ms(prompt, n), "search": await _amedian_ms(search, n)}

    return asyncio.run(main())


def cli(ws: Path, n: int) -> dict[str, float]:
    g = [_goclaw(), "-w", str(ws)]

    def run(args: list[str]) -> None:
        subprocess.run(g + args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    prompt = ["prompt", "--agent", AGENT, "--user", USER, "--message", MESSAGE]
    search = ["memory", "search", QUERY, "--agent", AGENT, "--user", USER, "--json"]
    return {"prompt": _median_ms(lambda: run(prompt), n, 1), "search": _median_ms(lambda: run(search), n, 1)}


def measure(quick: bool) -> dict[str, dict[str, float]]:
    """``{surface: {"prompt": ms, "search": ms}}`` on a fresh copy of the quickstart workspace."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    n = 30 if quick else 200
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "quickstart"
        setup(ws)
        return {
            "Python API": python_api(ws, n),
            "HTTP keep-alive": http_api(ws, n),
            "MCP stdio": mcp_stdio(ws, n),
            "CLI": cli(ws, 5 if quick else 15),
        }


def rows_of(results: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    base = results["Python API"]
    rows = []
    for op, label in (("prompt", "prompt build"), ("search", "memory search")):
        for surface, values in results.items():
            ref = None if surface == "Python API" else base[op]
            rows.append(row(f"{label} via {surface}", values[op], "ms", ref, "Python API" if ref else None))
    return rows


def run(quick: bool) -> list[dict[str, Any]]:
    """Rows for ``run.py``-style aggregation."""
    return rows_of(measure(quick))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results = measure(args.quick)
    if args.json:
        print(json.dumps(rows_of(results), indent=2))
        return
    base = results["Python API"]
    print("| surface | prompt build (ms) | over in-process | memory search (ms) | over in-process |")
    print("|---|---:|---:|---:|---:|")
    for surface, v in results.items():
        extra = [f"{v[op] - base[op]:+.1f}" if surface != "Python API" else "" for op in ("prompt", "search")]
        print(f"| {surface} | {v['prompt']:.1f} | {extra[0]} | {v['search']:.1f} | {extra[1]} |")


if __name__ == "__main__":
    main()
