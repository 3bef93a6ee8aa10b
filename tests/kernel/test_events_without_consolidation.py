"""The event queue is the kernel's and always on.

With the consolidation plugin family disabled, ``session end`` still publishes ``run.completed``
and a third-party worker subscribed through ``goclaw_consolidation_workers`` receives it through
``goclaw workers run --once``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from goclaw import hookimpl
from goclaw.engine import Engine
from goclaw.errors import PluginError
from goclaw.events import EventQueue
from tests.helpers import run_cli
from tests.plugin_install import on_sys_path, pip_install_target

MEMORY_FEATURES = ["goclaw.episodic", "goclaw.kg", "goclaw.channel_memory"]
CONSOLIDATION_FAMILY = [
    *MEMORY_FEATURES,
    "goclaw.workers.episodic",
    "goclaw.workers.semantic",
    "goclaw.workers.dedup",
    "goclaw.workers.dreaming",
    "goclaw.workers.retention",
]


@pytest.fixture(scope="module")
def listener_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pip_install_target("goclaw-listener", tmp_path_factory.mktemp("listener-site"))


@pytest.fixture
def listener_installed(listener_site: Path) -> Iterator[Path]:
    with on_sys_path(listener_site):
        yield listener_site


def _received(workspace: Path) -> list[dict[str, Any]]:
    path = workspace / "listener.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("disabled", [MEMORY_FEATURES, CONSOLIDATION_FAMILY], ids=["plugins", "family"])
def test_third_party_worker_gets_run_completed_with_consolidation_disabled(
    listener_installed: Path, workspace: Path, disabled: list[str]
) -> None:
    (workspace / "goclaw.toml").write_text(f"[plugins]\ndisable = {json.dumps(disabled)}\n")
    assert run_cli(["agent", "create", "ada"], workspace=workspace).code == 0
    for role, text in (("user", "hello there"), ("assistant", "hi")):
        result = run_cli(
            ["session", "append", "--agent", "ada", "--key", "k1", "--role", role, text], workspace=workspace
        )
        assert result.code == 0, result.err
    result = run_cli(["session", "end", "--key", "k1"], workspace=workspace)
    assert result.code == 0, result.err
    assert _received(workspace) == []

    result = run_cli(["workers", "run", "--once", "--worker", "listener.runs", "--json"], workspace=workspace)
    assert result.code == 0, result.err
    assert json.loads(result.out)["processed"] == 1
    [event] = _received(workspace)
    assert event["type"] == "run.completed"
    assert event["payload"]["session_key"] == "k1"
    # Drained: a second pass delivers nothing twice.
    result = run_cli(["workers", "run", "--once", "--json"], workspace=workspace)
    assert result.code == 0, result.err
    assert len(_received(workspace)) == 1


def test_engine_events_exists_whatever_is_disabled(workspace: Path) -> None:
    with Engine.open(workspace, plugins={"disable": CONSOLIDATION_FAMILY}) as engine:
        assert isinstance(engine.events, EventQueue)
        assert engine.has_service("events") and engine.service("events") is engine.events
        event_id = engine.events.publish_now("custom.thing", {"n": 1})
        assert event_id > 0
        assert engine.events.subscribers("run.completed") == []


def test_queue_settings_come_from_the_events_table(workspace: Path) -> None:
    (workspace / "goclaw.toml").write_text("[events]\nmax_attempts = 2\nlease_seconds = 30\n")
    with Engine.open(workspace) as engine:
        assert engine.events.max_attempts == 2 and engine.events.lease_seconds == 30


class _QueueThief:
    @hookimpl
    def goclaw_services(self, engine: Any) -> dict[str, Any]:
        return {"events": object()}


def test_a_plugin_cannot_replace_the_kernel_queue(workspace: Path) -> None:
    with pytest.raises(PluginError, match="events"):
        Engine.open(workspace, extra_plugins=[("thief", _QueueThief())])


def test_http_serve_with_workers_uses_the_kernel_queue_settings(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``goclaw serve --workers`` reads the queue knobs from the kernel's settings, not from
    [plugins.consolidation], and starts serving with them."""
    pytest.importorskip("uvicorn")
    import uvicorn

    from goclaw_http.server import serve

    ran: list[str] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: ran.append(kwargs["host"]))
    (workspace / "goclaw.toml").write_text("[events]\npoll_interval_seconds = 0.05\n")
    with Engine.open(workspace, plugins={"disable": MEMORY_FEATURES}) as engine:
        serve(engine, None, host="127.0.0.1", port=0, workers=True)
    assert ran == ["127.0.0.1"]
