"""Where the memory backends save an agent's search index (``<folder>/<name>.idx/``) and what
a save leaves beside it (issue 11).

A save writes ``<name>.idx.<random>.tmp`` and renames it into place, moving the previous index
aside as ``<name>.idx.<pid>.old`` in between (:func:`goclaw.retrieval.persist.save_index`); a
sketch job's save writes ``<name>.idx.<pid>.<thread>.staging`` and moves the previous one to
``<name>.idx.<pid>.<thread>.copy.old`` (:func:`goclaw_memory.deferred_sketches.save_copy`).
"""

from __future__ import annotations

import hashlib
import re

# The longest agent id (UTF-8 bytes) used as its saved index's name as is: with ".idx" and the
# longest leftover suffix of a save (".<pid>.<thread>.copy.old") it stays under 255 bytes.
PLAIN_NAME = 180


def snapshot_name(agent_id: str) -> str:
    """The file name (without ``.idx``) of the agent's saved index: the id itself when it is
    made of letters, digits, '-' and '_' only (as every name was before, so those indexes keep
    loading); else the id with every other character made '_', cut to 48, then '~' and the
    first 10 hex digits of its SHA-256, so that ids that clean to the same name ("a.b",
    "a b", "a_b") never share a file, and a long id does not exceed a file name's length."""
    if (
        agent_id
        and len(agent_id.encode("utf-8")) <= PLAIN_NAME
        and all(c.isalnum() or c in "-_" for c in agent_id)
    ):
        return agent_id
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", agent_id[:48])
    return f"{safe}~{hashlib.sha256(agent_id.encode('utf-8')).hexdigest()[:10]}"
