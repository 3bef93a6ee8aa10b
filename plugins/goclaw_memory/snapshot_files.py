"""Where the memory backends save an agent's search index (``<folder>/<name>.idx/``) and what
a save leaves beside it.

A save writes ``<name>.idx.<random>.tmp`` and renames it into place, moving the previous index
aside as ``<name>.idx.<pid>.old`` in between (:func:`goclaw_search.persist.save_index`); a
sketch job's save writes ``<name>.idx.<pid>.<thread>.staging`` and moves the previous one to
``<name>.idx.<pid>.<thread>.copy.old`` (:func:`goclaw_memory.deferred_sketches.save_copy`).
A process killed part-way leaves them behind, holding the agent's terms; a forget deletes the
agent's, and :func:`remove_stale_leftovers` (run by the backends' saves) every other one once
nothing can be writing it any more.
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


def remove_stale_leftovers(folder: Path) -> int:
    """Delete the leftovers of saves (module docstring) in ``folder`` unchanged for
    :data:`STALE` seconds, of every agent: a save killed part-way, in any process of the
    workspace, left them. Recent ones are kept: another process may be writing them. Returns
    how many were deleted."""
    try:
        entries = list(os.scandir(folder))
    except OSError:  # no folder yet, or unreadable: nothing to do
        return 0
    cutoff = time.time() - STALE
    removed = 0
    for entry in entries:
        if not _LEFTOVER.fullmatch(entry.name):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_mtime > cutoff:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:  # gone meanwhile (its save ended, another sweep), or not ours to delete
            continue
        removed += 1
    return removed
