"""Where the memory backends save an agent's search index (``<folder>/<name>.idx/``) and what
a save leaves beside it.

A save writes ``<name>.idx.<random>.tmp`` and renames it into place, moving the previous index
aside as ``<name>.idx.<pid>.old`` in between (:func:`goclaw_search.persist.save_index`); a
sketch job's save writes ``<name>.idx.<pid>.<thread>.staging`` and moves the previous one to
``<name>.idx.<pid>.<thread>.copy.old`` (:func:`goclaw_memory.deferred_sketches.save_copy`).
Each name carries the id of the process that wrote it (``<name>.idx.<pid>.<random>.tmp``). A
process killed part-way leaves them behind, holding the agent's terms; a forget deletes the
agent's, and :func:`remove_stale_leftovers` (run by the backends' first load and their saves)
every other one once nothing can be writing it any more: its process is gone, or it has not
changed for an hour.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from pathlib import Path

# The longest agent id (UTF-8 bytes) used as its saved index's name as is: with ".idx" and the
# longest leftover suffix of a save (".<pid>.<thread>.copy.old") it stays under 255 bytes.
PLAIN_NAME = 180
# A leftover of a save that has not changed for this long (seconds) is one no save is writing:
# a save creates its folder's files within seconds. (The previous index moved aside keeps its
# old time, but whoever moved it only deletes it next, so deleting it first costs nothing.)
STALE = 3600.0
SWEEP_EVERY = 600.0  # seconds between two sweeps of a backend's folder
# "<name>.idx.<anything>.old|.staging|.tmp": agent names hold no dots (snapshot_name).
_LEFTOVER = re.compile(r"[^.]+\.idx\..+\.(?:old|staging|tmp)")


def snapshot_name(agent_id: str) -> str:
    """The file name (without ``.idx``) of the agent's saved index: the id itself when it is
    made of letters, digits, '-' and '_' only (the only names older versions made, so their
    indexes keep loading); else the id with every other character made '_', cut to 48, then
    '~' and the first 10 hex digits of its SHA-256, so that ids that clean to the same name ("a.b",
    "a b", "a_b") never share a file, and a long id does not exceed a file name's length."""
    if (
        agent_id
        and len(agent_id.encode("utf-8")) <= PLAIN_NAME
        and all(c.isalnum() or c in "-_" for c in agent_id)
    ):
        return agent_id
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", agent_id[:48])
    return f"{safe}~{hashlib.sha256(agent_id.encode('utf-8')).hexdigest()[:10]}"


def is_leftover(name: str) -> bool:
    """Whether ``name`` is that of a save's leftover (module docstring)."""
    return _LEFTOVER.fullmatch(name) is not None


def leftover_pid(name: str) -> int | None:
    """The id of the process that wrote a leftover (``<name>.idx.<pid>.<...>``), or None when
    its name carries none (written by an older version)."""
    parts = name.split(".")
    return int(parts[2]) if len(parts) > 3 and parts[1] == "idx" and parts[2].isdigit() else None


def writer_alive(name: str) -> bool:
    """Whether the process that wrote the leftover ``name`` may still be writing it: alive, or
    not known (no pid in the name, or one this process may not signal)."""
    pid = leftover_pid(name)
    if pid is None or pid == os.getpid() or os.name == "nt":  # Windows: os.kill would end it
        return True  # this process's own: a save of another thread may be under way
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # alive, another user's
        return True
    return True


def remove_stale_leftovers(folder: Path) -> int:
    """Delete the leftovers of saves (module docstring) in ``folder``, of every agent, that no
    process is writing: the process named in it is gone (killed part-way), or it has not
    changed for :data:`STALE` seconds. Recent ones of a live process are kept: it may be
    writing them. Returns how many were deleted."""
    try:
        entries = list(os.scandir(folder))
    except OSError:  # no folder yet, or unreadable: nothing to do
        return 0
    cutoff = time.time() - STALE
    removed = 0
    for entry in entries:
        if not is_leftover(entry.name):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_mtime > cutoff and writer_alive(entry.name):
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:  # gone meanwhile (its save ended, another sweep), or not ours to delete
            continue
        removed += 1
    return removed
