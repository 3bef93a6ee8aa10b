"""How busy the machine is right now, for choices that pay only on idle cores (one BLAS thread
or two for a search's cosine, a background writer thread for indexing)."""

from __future__ import annotations

import os

__all__ = ["cpus", "own_running", "runnable"]


def runnable() -> int | None:
    """The number of threads runnable on the machine at this instant, this process's running
    ones included (Linux ``/proc/loadavg``'s fourth field); ``None`` where it cannot be read."""
    try:
        with open("/proc/loadavg", "rb") as f:
            return int(f.read().split()[3].split(b"/")[0])
    except (OSError, IndexError, ValueError):
        return None


def own_running() -> int | None:
    """How many of this process's threads are running or runnable at this instant (state
    ``R`` in Linux's ``/proc/self/task/*/stat``), the caller's included; ``None`` where it
    cannot be read."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    running = 0
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # the thread ended meanwhile
        # "pid (comm) S ...": the state follows the last ')' (a thread's name may hold one)
        if stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] == b"R":
            running += 1
    return running or None


def cpus() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
