"""What goclaw creates for a workspace is private whatever the umask: the database and its
folder (the tokens live there too), and memory files and their folders, which hold what users
told the agent. A file that exists keeps its mode (its owner chose it)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from goclaw.contracts.tools import ToolContext


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_database_and_its_folder_are_private(umask_022: None, tmp_path: Path, home: Path) -> None:
    from goclaw.engine import Engine

    ws = tmp_path / "ws"
    eng = Engine.open(ws)
    try:
        eng.agents.create("ada")
        eng.memory.writer.add("ada", "the deploy window is Thursday")
        folder = ws / ".goclaw"
        assert _mode(folder) == 0o700
        made = [p for p in folder.iterdir() if p.name.startswith("goclaw.db") and p.is_file()]
        assert {p.name for p in made} >= {"goclaw.db"}
        assert {p.name: _mode(p) for p in made} == {p.name: 0o600 for p in made}  # -wal, -shm too
    finally:
        eng.close()


def test_memory_files_and_folders_are_private(umask_022: None, engine: Any) -> None:
    engine.agents.create("ada")
    root = engine.agent_dir(engine.agents.get("ada"))
    agent = engine.memory.writer.add("ada", "the office wifi is Meadow", day="2026-01-02")
    user = engine.memory.writer.add("ada", "ann prefers tea", user="ann", day="2026-01-02")
    assert _mode(root / agent.path) == 0o600 and _mode(root / user.path) == 0o600
    for folder in ("memory", "users/ann", "users/ann/memory"):
        assert _mode(root / folder) == 0o700, folder
    # the tool path and a second file of the day
    engine.tools.call("memory_add", {"text": "ann's team is Blue"}, ToolContext(agent="ada", user="ann"))
    assert all(_mode(p) == 0o600 for p in (root / "users/ann/memory").iterdir())
    # a file its owner made readable keeps its mode when goclaw rewrites it
    (root / agent.path).chmod(0o644)
    engine.memory.writer.add("ada", "the printer is on floor 2", day="2026-01-02")
    assert _mode(root / agent.path) == 0o644


def test_user_scoped_token_reads_shared_agent_memory_but_never_writes_it(
    engine: Any, workspace: Path
) -> None:
    """docs/runtime.md: a user-scoped token reads the agent-level memory every user of the agent
    shares (its user's searches include it) and writes only its user's own."""
    from goclaw.errors import NotFoundError, PermissionDeniedError
    from goclaw_http.tokens import TokenStore

    engine.agents.create("ada")
    engine.memory.writer.add("ada", "the office wifi is Meadow", day="2026-01-02")
    store = TokenStore(workspace)
    store.create("ann-app", agents=["ada"], users=["ann"])
    tok = store.records()[0]
    tok.check("ada", "ann")
    with pytest.raises(PermissionDeniedError):
        tok.check("ada", None)  # agent-level writes (and every call without a user) are refused
    got = engine.tools.call(
        "memory_get", {"path": "memory/2026-01-02.md"}, ToolContext(agent="ada", user="ann")
    )
    assert not got.is_error and "Meadow" in got.text
    entry = engine.memory.writer.list("ada")[0]
    with pytest.raises((PermissionDeniedError, NotFoundError)):
        engine.memory.writer.delete("ada", "ann", id=entry.id)
    assert engine.memory.writer.list("ada")[0].id == entry.id
