"""How busy the machine is right now, for choices that pay only on idle cores (one BLAS thread
or two for a search's cosine, a background writer thread for indexing)."""

from __future__ import annotations

import os

__all__ = ["cpus", "runnable"]


def runnable() -> int | None:
    """The number of threads runnable on the machine at this instant, this process's running
    ones included (Linux ``/proc/loadavg``'s fourth field); ``None`` where it cannot be read."""
    try:
        with open("/proc/loadavg", "rb") as f:
            return int(f.read().split()[3].split(b"/")[0])
    except (OSError, IndexError, ValueError):
        return None


def cpus() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
