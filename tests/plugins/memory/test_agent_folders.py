"""An agent's folder is its own, and a user's folder is never reached through a
symlink, so no agent or user reads another's memory through the file system."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from goclaw.errors import NotFoundError, PermissionDeniedError, ValidationError
from goclaw_memory.paths import user_ids, writable_memory_path
from tests.conftest import BACKENDS, module_engine
from tests.helpers import run_cli

BOB_SECRET = "Bob's locker combination is 4-8-15"


def _bob(engine: Any) -> Path:
    engine.agents.create("bob")
    root = engine.agent_dir(engine.agents.get("bob"))
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text(f"{BOB_SECRET}\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module", params=BACKENDS)
def with_bob(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Agent "bob" with his memory, one engine per database for the refusals below (each checks
    that nothing was created)."""
    with module_engine(request.param, tmp_path_factory.mktemp("bob")) as engine:
        _bob(engine)
        yield engine


@pytest.mark.parametrize(
    "bad", ["agents/bob", "./agents/bob/", "agents/bob/users/x", "../x", "/etc", "agents", "."]
)
def test_agent_dir_outside_the_area_or_owned_is_refused(with_bob: Any, bad: str) -> None:
    with pytest.raises(ValidationError):
        with_bob.agents.create("mallory", workspace_dir=bad)
    assert [a.name for a in with_bob.agents.list()] == ["bob"]


def test_agent_dir_cli_refusal_is_one_line(
    workspace: Path, database_url: str | None, make_engine: Any
) -> None:
    _bob(make_engine())
    for bad in ("agents/bob", "../x", "/etc"):
        res = run_cli(
            ["agent", "create", "mallory", "--dir", bad], workspace=workspace, database_url=database_url
        )
        assert res.code != 0 and len(res.err.strip().splitlines()) == 1, res.err
        assert "Traceback" not in res.err and "internal error" not in res.err
    res = run_cli(
        ["agent", "create", "mallory", "--dir", "agents/mallory-home"],
        workspace=workspace,
        database_url=database_url,
    )
    assert res.code == 0, res.err
    res = run_cli(
        ["memory", "search", "locker", "-a", "mallory", "--json"],
        workspace=workspace,
        database_url=database_url,
    )
    assert BOB_SECRET not in res.out


def test_default_folder_claimed_by_another_agent_or_symlinked_is_refused(
    engine: Any, workspace: Path
) -> None:
    bob_dir = _bob(engine)
    engine.agents.create("x", workspace_dir="agents/carol")
    with pytest.raises(ValidationError, match="overlaps"):
        engine.agents.create("carol")  # would share x's folder
    (workspace / "agents" / "mallory").symlink_to(bob_dir, target_is_directory=True)
    with pytest.raises(ValidationError, match="overlaps"):
        engine.agents.create("mallory")
    with pytest.raises(ValidationError):
        engine.agents.update("x", workspace_dir="agents/bob")
    engine.agents.update("x", workspace_dir="agents/x-moved")  # a folder of its own is fine


def test_symlinked_user_folder_never_exposes_another_user(engine: Any, workspace: Path) -> None:
    engine.agents.create("ada")
    root = engine.agent_dir(engine.agents.get("ada"))
    bob = root / "users" / "bob"
    (bob / "memory").mkdir(parents=True)
    (bob / "MEMORY.md").write_text(f"{BOB_SECRET}\n", encoding="utf-8")
    (bob / "memory" / "notes.md").write_text("bob notes: the vault code is 7741\n", encoding="utf-8")
    os.symlink("bob", root / "users" / "mallory", target_is_directory=True)
    # agent-level memory that points into a user's folder is not agent-level memory
    (root / "memory").mkdir()
    (root / "memory" / "leak.md").symlink_to(bob / "memory" / "notes.md")

    assert user_ids(root) == ["bob"]
    engine.memory.index("ada")
    engine.memory.index("ada", "mallory")
    for user in ("mallory", None):
        hits = engine.memory.search("locker combination vault code", "ada", user, channel="lexical")
        assert hits == [], hits
    assert engine.memory.search("locker combination", "ada", "bob", channel="lexical")  # bob still can
    for path in ("users/mallory/MEMORY.md", "MEMORY.md", "memory/notes.md"):
        with pytest.raises((PermissionDeniedError, NotFoundError)) as err:
            engine.memory.get("ada", path, "mallory")
        assert BOB_SECRET not in str(err.value)
    with pytest.raises(PermissionDeniedError, match="symlinked user folder"):
        engine.memory.get("ada", "users/mallory/MEMORY.md", "mallory")
    with pytest.raises(PermissionDeniedError):
        engine.memory.get("ada", "memory/leak.md")
    # the flush's file tools cannot write into bob's folder through mallory's
    with pytest.raises(PermissionDeniedError):
        writable_memory_path(root, "mallory", "memory/2026-01-01.md")
    assert sorted(p.name for p in (bob / "memory").iterdir()) == ["notes.md"]


def test_agent_folders_are_unique_across_tenants(make_engine: Any) -> None:
    owner = make_engine()
    _bob(owner)
    other = make_engine(tenant_id="x")
    with pytest.raises(ValidationError, match="another agent"):
        other.agents.create("bob")  # would share agents/bob and so bob's memory
    other.agents.create("bob", workspace_dir="agents/x-bob")
    assert other.memory.search("locker combination", "bob", channel="lexical") == []


def test_writes_through_a_symlinked_user_folder_are_refused(
    engine: Any, workspace: Path, database_url: str | None
) -> None:
    """``users/mallory -> bob``: adding, correcting or deleting as mallory (Python, tool, CLI)
    and dreaming for mallory are refused the way reading is, and bob's files stay as they were."""
    from goclaw.contracts.tools import ToolContext
    from goclaw_episodic.dreaming import dream_path

    engine.agents.create("ada")
    root = engine.agent_dir(engine.agents.get("ada"))
    bob = engine.memory.writer.add(
        "ada", "bob keeps the spare key under the mat", user="bob", day="2026-01-02"
    )
    os.symlink("bob", root / "users" / "mallory", target_is_directory=True)
    before = sorted((p.name, p.read_bytes()) for p in (root / "users" / "bob" / "memory").iterdir())
    w = engine.memory.writer
    for write in (
        lambda: w.add("ada", "mallory was here", user="mallory", day="2026-01-02"),
        lambda: w.add("ada", "mallory was here", user="mallory"),
        lambda: w.correct("ada", "mallory was here", user="mallory", id=bob.id),
        lambda: w.delete("ada", user="mallory", id=bob.id),
        lambda: w.delete("ada", user="mallory", path="memory/2026-01-02.md", lines=(1, 2)),
    ):
        with pytest.raises(PermissionDeniedError, match="symlinked user folder"):
            write()
    result = engine.tools.call(
        "memory_add", {"text": "mallory was here"}, ToolContext(agent="ada", user="mallory")
    )
    assert result.is_error and "symlinked user folder" in result.text
    cli = run_cli(
        ["memory", "add", "mallory was here", "-a", "ada", "-u", "mallory"],
        workspace=workspace,
        database_url=database_url,
    )
    assert cli.code != 0 and "symlinked user folder" in cli.err and "Traceback" not in cli.err
    with pytest.raises(PermissionDeniedError, match="symlinked user folder"):
        dream_path(engine, engine.agents.get("ada"), "mallory", datetime(2026, 1, 2, tzinfo=UTC))
    after = sorted((p.name, p.read_bytes()) for p in (root / "users" / "bob" / "memory").iterdir())
    assert after == before
    assert [e.id for e in w.list("ada", "bob")] == [bob.id]
