"""Replacing and removing whole features, through the CLI:

* the built-in dreaming worker disabled and a from-scratch one (tests/third_party/goclaw-reverie,
  written only against ``goclaw.contracts``: the ``episodic`` service, the memory-file writer,
  the event names) installed by entry point, driven by ``goclaw workers run --once``, its
  effect checked;
* with the episodic and knowledge-graph features disabled, a third-party worker
  (tests/third_party/goclaw-listener) still receives ``run.completed`` from a full
  ``workers run --once`` (every remaining built-in worker runs too, and none fails)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from goclaw.engine import Engine
from tests.helpers import run_cli
from tests.plugin_install import on_sys_path, pip_install_target

SESSIONS = [
    "We chose Postgres for the Atlas storage layer.",
    "The Atlas kickoff is in Berlin next week.",
    "Alice prefers async standups for Atlas.",
]


@pytest.fixture(scope="module")
def reverie_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pip_install_target("goclaw-reverie", tmp_path_factory.mktemp("reverie-site"))


@pytest.fixture
def reverie(reverie_site: Path) -> Iterator[None]:
    with on_sys_path(reverie_site):
        yield


def _cli(workspace: Path, database_url: str | None, *args: str) -> Any:
    result = run_cli(list(args), workspace=workspace, database_url=database_url)
    assert result.code == 0, result.err
    return result


def test_replacement_dreaming_worker_through_the_cli(
    reverie: None, workspace: Path, database_url: str | None
) -> None:
    # Nothing disabled: reverie's manifest says it replaces the built-in.
    (workspace / "goclaw.toml").write_text("[plugins.reverie]\nthreshold = 3\n")
    cli = lambda *args: _cli(workspace, database_url, *args)  # noqa: E731
    plugins = {p["name"]: p["status"] for p in json.loads(cli("plugins", "--all", "--json").out)}
    assert plugins["reverie"] == "active" and plugins["goclaw.workers.dreaming"] == "blocked"
    cli("agent", "create", "ada")
    for i, text in enumerate(SESSIONS):
        for role, content in (("user", text), ("assistant", "Noted.")):
            cli(
                "session",
                "append",
                "--agent",
                "ada",
                "--user",
                "u1",
                "--key",
                f"s{i}",
                "--role",
                role,
                content,
            )
        cli("session", "end", "--key", f"s{i}")

    report = json.loads(cli("workers", "run", "--once", "--json").out)
    assert report["failed"] == 0 and report["dead"] == 0

    # The effect: one dream in u1's dated memory file, found by memory search, every summary
    # promoted; the built-in's dreams folder was never written.
    hits = json.loads(
        cli("memory", "search", "Berlin kickoff", "--agent", "ada", "--user", "u1", "--json").out
    )
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    dream = [h for h in hits if h["path"] == f"users/u1/memory/{today}.md"]
    assert dream and "Dreamt from 3 sessions" in dream[0]["snippet"]
    with Engine.open(workspace, database_url=database_url) as engine:
        agent = engine.agents.get("ada")
        episodic = engine.service("episodic")
        assert len(episodic.list(agent.id, "u1", exact_user=True)) == 3
        assert episodic.list(agent.id, "u1", unpromoted_only=True, exact_user=True) == []
        entries = engine.memory.writer.list("ada", "u1", tag="dream")
        assert len(entries) == 1 and len(entries[0].metadata["of"]) == 3
        assert not (engine.agent_dir(agent) / "users" / "u1" / "memory" / "dreams").exists()

    # A replay of the same event (a crash before promotion) writes nothing twice.
    with Engine.open(workspace, database_url=database_url) as engine:
        agent = engine.agents.get("ada")
        ids = [s.id for s in engine.service("episodic").list(agent.id, "u1", exact_user=True)]
        from goclaw_reverie import Reverie

        event = type("E", (), {"payload": {"agent_id": agent.id, "user_id": "u1"}, "agent_id": agent.id})
        with engine.db.engine.begin() as conn:
            conn.exec_driver_sql("UPDATE episodic_summaries SET promoted_at = NULL")
        Reverie().handle(event, engine)
        assert len(engine.memory.writer.list("ada", "u1", tag="dream")) == 1
        assert engine.service("episodic").list(agent.id, "u1", unpromoted_only=True, exact_user=True) == []
        assert sorted(ids) == sorted(engine.memory.writer.list("ada", "u1", tag="dream")[0].metadata["of"])


@pytest.fixture(scope="module")
def listener_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pip_install_target("goclaw-listener", tmp_path_factory.mktemp("listener-site"))


@pytest.fixture
def listener(listener_site: Path) -> Iterator[None]:
    with on_sys_path(listener_site):
        yield


@pytest.mark.parametrize(
    "disabled",
    [["goclaw.episodic", "goclaw.kg"], ["goclaw.episodic"], ["goclaw.kg"]],
    ids=["both", "episodic", "kg"],
)
def test_worker_gets_run_completed_with_episodic_and_kg_disabled(
    listener: None, workspace: Path, database_url: str | None, disabled: list[str]
) -> None:
    """Only the features are disabled; their workers (``goclaw.workers.*``) stay enabled and
    must find nothing to do rather than fail on the feature's missing tables."""
    (workspace / "goclaw.toml").write_text(f"[plugins]\ndisable = {json.dumps(disabled)}\n")
    cli = lambda *args: _cli(workspace, database_url, *args)  # noqa: E731
    plugins = {p["name"]: p["status"] for p in json.loads(cli("plugins", "--all", "--json").out)}
    assert {plugins[name] for name in disabled} == {"blocked"}
    assert plugins["listener"] == "active"
    cli("agent", "create", "ada")
    for role, text in (("user", "Alice Smith leads Project Atlas in Berlin."), ("assistant", "Noted.")):
        cli("session", "append", "--agent", "ada", "--user", "u1", "--key", "k1", "--role", role, text)
    cli("session", "end", "--key", "k1")
    report = json.loads(cli("workers", "run", "--once", "--json").out)
    assert report["processed"] >= 1 and report["failed"] == 0 and report["dead"] == 0
    [line] = (workspace / "listener.jsonl").read_text().splitlines()
    event = json.loads(line)
    assert event["type"] == "run.completed" and event["payload"]["session_key"] == "k1"
    with Engine.open(workspace, database_url=database_url) as engine:
        assert [name for name in ("episodic", "kg") if engine.has_service(name)] == [
            name for name in ("episodic", "kg") if f"goclaw.{name}" not in disabled
        ]
    assert "warning" not in cli("workers", "run", "--once").err  # the periodic jobs too


def test_the_plugin_guide_shows_the_tested_code() -> None:
    """The walk-throughs show these files inline (readable on GitHub), each exactly as tested
    above and in test_third_party_search_backend."""
    root = Path(__file__).resolve().parents[2]
    guide = (root / "docs" / "plugins.md").read_text(encoding="utf-8")
    assert "--8<--" not in guide
    for shown in (
        "tests/third_party/goclaw-minisearch/pyproject.toml",
        "tests/third_party/goclaw-minisearch/goclaw_minisearch/__init__.py",
        "tests/third_party/goclaw-reverie/goclaw_reverie/__init__.py",
        "tests/third_party/goclaw-listener/goclaw_listener/__init__.py",
    ):
        assert (root / shown).read_text(encoding="utf-8").rstrip("\n") + "\n```" in guide, shown


def test_an_installed_replacement_blocks_the_builtin_until_it_is_disabled(reverie: None) -> None:
    from goclaw.cli.lazy import block_reason
    from goclaw.config import PluginsConfig
    from goclaw.plugins import discover

    installed = discover()
    dreaming = "goclaw.workers.dreaming"
    assert installed.blocked(PluginsConfig())[dreaming] == "replaced by reverie"
    assert block_reason(PluginsConfig(), dreaming, installed) == "which is replaced by reverie"
    assert dreaming not in installed.blocked(PluginsConfig(disable=["reverie"]))
    assert dreaming not in installed.blocked(PluginsConfig(autoload=False))
    # A workspace that disabled the built-in by hand keeps working.
    assert installed.blocked(PluginsConfig(disable=[dreaming]))[dreaming] == "disable"
