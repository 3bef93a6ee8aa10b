"""Memory indexing and hybrid search on SQLite: the shipped backend suite
(:mod:`goclaw_memory.testing.backend_suite`) on the default backend there (``sqlite``), and the
SQLite backend's own in-memory vector cache. On PostgreSQL the default is ``postgresql``, whose
module (test_postgres_backend.py) runs the suite with it; test_inprocess_backend.py runs it
with ``inprocess`` on both databases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goclaw_memory.testing.backend_suite import *  # noqa: F403 - the suite's tests and fixtures
from goclaw_memory.testing.backend_suite import ada_dir, fill
from tests.memory_helpers import write


@pytest.fixture(params=["sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    """SQLite only (PostgreSQL's default backend runs the suite in test_postgres_backend.py)."""
    return str(request.param)


# --------------------------------------------------------------------------- SQLite vector cache


def _matrix_rows(
    backend: Any, agent_id: str, space: tuple[str, str, int]
) -> dict[int, tuple[str, Any, float]]:
    """Per chunk id: (user, vector, BM25 for a fixed query) as the loaded in-memory index has it."""
    idx = backend._state(agent_id, space).index
    users = {code: name for name, code in idx.scopes.items()}
    bm25 = idx.bm25(["ferri", "lighthous", "tea", "note", "edit"])
    return {
        int(i): (users[int(idx.scope[s])], idx.vec[s].copy(), float(bm25[s])) for i, s in idx.slot_of.items()
    }


def test_sqlite_vector_cache_is_patched_in_process_and_matches_a_reload(workspace: Path) -> None:
    from goclaw.engine import Engine

    eng = Engine.open(workspace)  # SQLite, the default static embedder
    other = None
    try:
        eng.agents.create("ada")
        root = ada_dir(eng)
        fill(root)
        write(root, "users/u1/memory/u.md", "U1 keeps the spare bicycle key in the garage.\n")
        eng.memory.index("ada")
        backend = eng.memory.backend
        agent = eng.agents.get("ada")
        emb = eng.embedder()
        space = (emb.provider, emb.model, int(emb.dim))
        assert eng.memory.search("tomato plants", "ada")
        loads = backend.loads
        # In-process edits, deletions, additions (agent level and a new user): patched, twice
        # (the first patch outgrows the loaded buffer, the second fits in its headroom).
        write(root, "memory/notes-1.md", "# Note 1\n\nA first edit, replaced again below.\n")
        write(root, "memory/notes-5.md", "# Note 5\n\nEdited once.\n\nWith a second chunk.\n")
        eng.memory.index("ada")
        write(root, "memory/notes-0.md", "# Note 0\n\nThe harbour ferry leaves at noon on Sundays.\n")
        (root / "memory" / "notes-1.md").unlink()
        write(root, "memory/new.md", "Lighthouse keepers log the fog horn tests.\n\nSecond paragraph here.\n")
        write(root, "users/u2/memory/v.md", "U2 prefers green tea in the afternoon.\n")
        eng.memory.index("ada")
        patched = _matrix_rows(backend, agent.id, space)
        assert backend.loads == loads and backend.patches >= 2
        hits = eng.memory.search("when does the ferry leave", "ada", channel="vector")
        assert hits[0].path == "memory/notes-0.md"
        tea = eng.memory.search("tea preference", "ada", "u2", channel="vector")
        assert tea[0].path.startswith("users/u2/")
        backend.invalidate(agent.id)
        fresh = _matrix_rows(backend, agent.id, space)
        assert backend.loads == loads + 1
        assert patched.keys() == fresh.keys()
        for cid, (user, vec, bm25) in fresh.items():
            assert patched[cid][0] == user
            np.testing.assert_allclose(patched[cid][1], vec, rtol=1e-6, atol=1e-7)
            assert patched[cid][2] == pytest.approx(bm25, rel=1e-5)

        # Another process's write: the token moves outside this engine, so it reloads.
        other = Engine.open(workspace)
        write(root, "memory/new.md", "Volcano observatory readings arrive every hour.\n")
        other.memory.index("ada")
        before = backend.loads
        hits = eng.memory.search("volcano observatory", "ada", channel="vector")
        assert hits[0].path == "memory/new.md" and backend.loads == before + 1
    finally:
        if other is not None:
            other.close()
        eng.close()
