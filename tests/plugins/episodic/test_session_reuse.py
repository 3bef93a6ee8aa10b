"""A re-used session key is consolidated once per run.

Append, end, ``workers run``; append again to the same key, end, ``workers run``: two
episodes, each summarising its own run, with distinct source ids; replaying the events or
ending a run twice adds nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import run_cli


def _cli(workspace: Path, database_url: str | None, *args: str) -> Any:
    result = run_cli(list(args), workspace=workspace, database_url=database_url)
    assert result.code == 0, result.err
    return result


def _append(workspace: Path, database_url: str | None, role: str, text: str) -> None:
    _cli(workspace, database_url, "session", "append", "-a", "ada", "--user", "u1", "--key", "c1",
         "--role", role, text)  # fmt: skip


def _episodes(workspace: Path, database_url: str | None) -> list[dict[str, Any]]:
    out = _cli(workspace, database_url, "session", "episodes", "-a", "ada", "--user", "u1", "--json").out
    return sorted(json.loads(out), key=lambda e: e["source_id"])


def test_second_run_of_a_key_gets_its_own_episode(engine: Any, workspace: Path, database_url: Any) -> None:
    engine.agents.create("ada")
    _append(
        workspace, database_url, "user", "Please remember that Orion launches on May 4 with Vega support."
    )
    _append(workspace, database_url, "assistant", "Got it: Orion launches May 4.")
    _cli(workspace, database_url, "session", "end", "--key", "c1")
    _cli(workspace, database_url, "workers", "run", "--once")
    assert [e["source_id"] for e in _episodes(workspace, database_url)] == ["c1:0"]

    _append(workspace, database_url, "user", "Next topic: the Lyra budget review moved to Friday in Lisbon.")
    _append(workspace, database_url, "assistant", "Noted, Lyra review on Friday.")
    _cli(workspace, database_url, "session", "end", "--key", "c1")
    _cli(workspace, database_url, "session", "end", "--key", "c1")  # ended twice: still one run
    _cli(workspace, database_url, "workers", "run", "--once")
    episodes = _episodes(workspace, database_url)
    assert [e["source_id"] for e in episodes] == ["c1:0", "c1:0:r2"]
    first, second = episodes
    assert "Orion" in first["summary"] and "Lyra" not in first["summary"]
    assert "Lyra" in second["summary"] and "Orion" not in second["summary"]  # only its own run
    names = {e.name for e in engine.kg.entities("ada", "u1")}
    assert {"Orion", "Lyra"} <= names  # the second run's facts reach the knowledge graph too

    engine.events.retry(dead_only=False)  # a replay of every event creates nothing new
    _cli(workspace, database_url, "workers", "run", "--once")
    assert [e["source_id"] for e in _episodes(workspace, database_url)] == ["c1:0", "c1:0:r2"]
