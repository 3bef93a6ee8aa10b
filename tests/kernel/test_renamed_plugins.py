"""The old plugin name ``goclaw.consolidation`` and its ``[plugins.consolidation]`` table keep
working as aliases of ``goclaw.episodic``/``goclaw.kg``/``goclaw.channel_memory``, each with a
one-line deprecation warning."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from goclaw.engine import Engine
from goclaw.errors import ConfigError
from goclaw.plugins import discover
from tests.helpers import run_cli

NEW = discover().aliases["goclaw.consolidation"]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "deprecated" in r.getMessage()
    ]


def test_disable_by_the_old_name_disables_the_new_plugins(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with Engine.open(workspace, plugins={"disable": ["goclaw.consolidation"]}) as engine:
        records = engine.plugin_manager.records
        assert {n: records[n].status for n in NEW} == dict.fromkeys(NEW, "blocked")
        assert records["goclaw.workers.episodic"].status == "active"  # workers keep their own names
        assert not engine.has_service("episodic") and not engine.has_service("kg")
    [message] = _warnings(caplog)
    assert "goclaw.consolidation" in message and "goclaw.episodic" in message and "\n" not in message


def test_only_by_the_old_name(workspace: Path) -> None:
    with Engine.open(workspace, plugins={"only": ["goclaw.consolidation"]}) as engine:
        active = set(engine.plugin_manager.active_names())
    assert set(NEW) <= active
    assert "goclaw.skills" not in active and "goclaw.workers.semantic" not in active


def test_the_old_table_configures_each_new_table(workspace: Path, caplog: pytest.LogCaptureFixture) -> None:
    (workspace / "goclaw.toml").write_text(
        "[plugins.consolidation]\n"
        "dreaming_batch = 3\n"  # episodic's
        "dedup_candidate_name = 0.5\n"  # kg's
        "llm_timeout_seconds = 7\n"  # all three have one
        "[plugins.kg]\n"
        "dedup_auto_merge_name = 0.99\n"
    )
    with Engine.open(workspace) as engine:
        episodic, kg = engine.plugin_settings("episodic"), engine.plugin_settings("kg")
        channel = engine.plugin_settings("channel_memory")
    assert episodic.dreaming_batch == 3 and kg.dedup_candidate_name == 0.5
    assert kg.dedup_auto_merge_name == 0.99  # the new table's own keys are kept
    assert episodic.llm_timeout_seconds == kg.llm_timeout_seconds == channel.llm_timeout_seconds == 7
    [message] = _warnings(caplog)
    assert "[plugins.consolidation]" in message and "[plugins.kg]" in message


def test_the_new_table_wins_over_the_old(workspace: Path) -> None:
    plugins = {"consolidation": {"dreaming_batch": 3}, "episodic": {"dreaming_batch": 4}}
    with Engine.open(workspace, plugins=plugins) as engine:
        assert engine.plugin_settings("episodic").dreaming_batch == 4


def test_an_unknown_key_in_the_old_table_is_an_error(workspace: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"\[plugins.consolidation\]: unknown key 'dreaming_bach'.*dreaming_batch"
    ):
        Engine.open(workspace, plugins={"consolidation": {"dreaming_bach": 3}})


def test_the_cli_prints_one_line_per_deprecation(workspace: Path) -> None:
    """Through the real entry point: stdout stays pure JSON, stderr has one line per old name."""
    (workspace / "goclaw.toml").write_text(
        '[plugins]\ndisable = ["goclaw.consolidation"]\n'
        "[plugins.consolidation]\nauto_inject_enabled = false\n"
    )
    env = {**os.environ, "GOCLAW_DISABLE_PLUGIN_AUTOLOAD": "1"}
    code = "import sys; from goclaw.cli import main; sys.argv[0] = 'goclaw'; main()"
    result = subprocess.run(
        [sys.executable, "-c", code, "--workspace", str(workspace), "agent", "list", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 2, lines
    assert "plugins.disable names 'goclaw.consolidation'" in lines[0]
    assert "[plugins.consolidation] is split into" in lines[1]


# --------------------------------------------------------------------------- moved settings


def test_cache_seconds_is_the_context_files_table(workspace: Path) -> None:
    with Engine.open(workspace, plugins={"context_files": {"cache_seconds": 0}}) as engine:
        assert engine.files.cache_seconds == 0
    with pytest.raises(ConfigError, match=r"\[plugins.bootstrap\]: unknown key 'summon_timout'"):
        Engine.open(workspace, plugins={"bootstrap": {"summon_timout": 1}})


def test_the_old_cache_seconds_key_still_works_with_bootstrap_disabled(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The essential context-file cache read ``[plugins.bootstrap] cache_seconds``: with
    goclaw.bootstrap disabled a user's ``cache_seconds = 0`` was silently replaced by 5 s."""
    (workspace / "goclaw.toml").write_text(
        '[plugins]\ndisable = ["goclaw.bootstrap"]\n[plugins.bootstrap]\ncache_seconds = 0\n'
    )
    with Engine.open(workspace) as engine:
        assert engine.files.cache_seconds == 0
    [message] = _warnings(caplog)
    assert "[plugins.bootstrap] cache_seconds is now [plugins.context_files] cache_seconds" in message


def test_the_new_cache_seconds_key_wins(workspace: Path) -> None:
    plugins = {"bootstrap": {"cache_seconds": 0}, "context_files": {"cache_seconds": 7}}
    with Engine.open(workspace, plugins=plugins) as engine:
        assert engine.files.cache_seconds == 7


# --------------------------------------------------------------------------- features meet through services


def test_channel_memory_without_episodic_says_so_and_keeps_the_item(workspace: Path) -> None:
    """Channel memory records an approved item through the episodic service (it never imports
    the episodic store): with goclaw.episodic off, approving is a one-line error and the item
    stays pending, nothing half-written."""
    (workspace / "goclaw.toml").write_text('[plugins]\ndisable = ["goclaw.episodic"]\n')
    with Engine.open(workspace, plugins={"embeddings": {"provider": "none"}}) as engine:
        engine.agents.create("ada")
        engine.channel_memory.configure("ada", "#eng", enabled=True)
        [item] = engine.channel_memory.ingest("ada", "#eng", [{"user": "dev1", "text": "We ship on Friday."}])
    result = run_cli(["channel-memory", "approve", str(item["id"])], workspace=workspace)
    assert result.code != 0
    assert result.err.strip() == "error: 'episodic' is not available: plugin goclaw.episodic is blocked", (
        result.err
    )
    listed = run_cli(["channel-memory", "list", "--agent", "ada", "--json"], workspace=workspace)
    assert [i["status"] for i in json.loads(listed.out)] == ["pending"]


def test_the_old_table_from_an_environment_variable(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOCLAW_PLUGINS__CONSOLIDATION__DREAMING_BATCH", "3")
    monkeypatch.setenv("GOCLAW_PLUGINS__CONSOLIDATION__EXCLUSIVE_RELATION_TYPES", '["works_at"]')
    with Engine.open(workspace) as engine:
        assert engine.plugin_settings("episodic").dreaming_batch == 3
        assert engine.plugin_settings("kg").exclusive_relation_types == ["works_at"]
