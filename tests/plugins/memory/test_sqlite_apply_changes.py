"""An index run's hand-over to the SQLite backend (``apply_changes``) does not read the database
again: the state it builds or patches is current as of the run's last version (at
10,000 chunks that read, on a fresh connection beside the sketch job and the WAL checkpoint,
takes up to 0.3 s of the run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.memory_helpers import write


def _token_reads(backend: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    real = backend._read_token

    def counting(agent_id: str) -> str:
        reads.append(agent_id)
        return str(real(agent_id))

    monkeypatch.setattr(backend, "_read_token", counting)
    return reads


def _saved_token(path: Path) -> str:
    return str(json.loads((path / "meta.json").read_text(encoding="utf-8"))["token"])


def test_the_first_run_and_a_patch_save_without_reading_the_token(
    make_engine: Any, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend != "sqlite":
        pytest.skip("the saved index exists next to a SQLite file only")
    from goclaw_memory import sqlite_backend

    monkeypatch.setattr(sqlite_backend, "SAVE_DELTA", 1)  # every run here is "a large change"
    eng = make_engine()
    agent = eng.agents.create("ada")
    root = Path(eng.agent_dir(agent))
    write(root, "MEMORY.md", "The harbour ferry leaves at noon on Sundays.\n")
    write(root, "memory/2026-01-02.md", "Ada moved the boat to pier nine.\n\nShe paid the mooring fee.\n")
    mem = eng.memory.backend
    reads = _token_reads(mem, monkeypatch)
    eng.memory.index("ada")
    path = mem._snapshot(agent.id)
    assert reads == [] and path is not None and path.exists()
    token = mem._states[agent.id].token
    assert token and _saved_token(path) == token == mem._read_token(agent.id)

    reads.clear()
    write(root, "memory/2026-01-03.md", "The ferry timetable changes in March.\n\nPier nine closes.\n")
    eng.memory.index("ada")  # patches the loaded index and saves it
    assert reads == []
    token = mem._states[agent.id].token
    assert _saved_token(path) == token == mem._read_token(agent.id)
    hits = eng.memory.search("ferry timetable March", "ada", channel="lexical")
    assert hits and hits[0].path == "memory/2026-01-03.md"
