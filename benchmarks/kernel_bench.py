"""Kernel start-up costs: `goclaw --help`, opening an engine, a CLI command end to end.

Baseline for the CLI: `python -c pass` (the interpreter's own start-up), measured in the same run.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GOCLAW = str(Path(sys.executable).with_name("goclaw"))


def _median_wall(cmd: list[str], repeat: int, cwd: str) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, cwd=cwd)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(quick: bool) -> list[dict[str, Any]]:
    repeat = 5 if quick else 15
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        python = _median_wall([sys.executable, "-c", "pass"], repeat, tmp)
        help_s = _median_wall([GOCLAW, "--help"], repeat, tmp)
        rows.append(
            {
                "name": "goclaw --help (wall)",
                "value": help_s * 1000,
                "unit": "ms",
                "baseline": python * 1000,
                "baseline_name": "python -c pass",
                "ratio": None,
            }
        )
        subprocess.run([GOCLAW, "-w", tmp, "init"], check=True, capture_output=True)
        subprocess.run([GOCLAW, "-w", tmp, "agent", "create", "bench"], check=True, capture_output=True)
        listing = _median_wall([GOCLAW, "-w", tmp, "agent", "list", "--json"], repeat, tmp)
        rows.append(
            {"name": "goclaw agent list --json (wall, SQLite)", "value": listing * 1000, "unit": "ms"}
        )

        from goclaw.engine import Engine

        opens = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            Engine.open(tmp).close()
            opens.append(time.perf_counter() - t0)
        rows.append(
            {
                "name": "Engine.open warm (SQLite, migrated)",
                "value": statistics.median(opens) * 1000,
                "unit": "ms",
            }
        )
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(f"| {row['name']} | {row['value']:.1f} {row['unit']} |")
