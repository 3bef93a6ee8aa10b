"""A replacement memory search backend written from scratch: the pure-Python
``minisearch`` plugin (tests/third_party/goclaw-minisearch), installed for real through its entry
point and selected by config, passes the same backend suite as SQLite, PostgreSQL and LanceDB
(every test of goclaw_memory.testing.backend_suite, on a SQLite and a PostgreSQL database), and works
through ``goclaw memory index`` / ``goclaw memory search --json`` across processes' worth of
engines, catching up through the contract's ``IndexSource`` when it was not selected."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from goclaw_memory.testing.backend_suite import *  # noqa: F403 - the suite's tests and fixtures
from goclaw_memory.testing.helpers import run_cli, write
from tests.plugin_install import on_sys_path, pip_install_target


@pytest.fixture
def search_backend() -> str:
    return "minisearch"


@pytest.fixture(scope="session")
def minisearch_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pip_install_target("goclaw-minisearch", tmp_path_factory.mktemp("minisearch-site"))


@pytest.fixture(autouse=True)
def minisearch_installed(minisearch_site: Path) -> Iterator[None]:
    with on_sys_path(minisearch_site):
        yield


def test_selected_by_config_and_driven_through_the_cli(
    workspace: Path, database_url: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOCLAW_PLUGINS__MEMORY__BACKEND")
    (workspace / "goclaw.toml").write_text('[plugins.memory]\nbackend = "minisearch"\n')
    args = {"workspace": workspace, "database_url": database_url}
    assert run_cli(["agent", "create", "ada"], **args).code == 0
    plugins = json.loads(run_cli(["plugins", "--json"], **args).out)
    assert {p["name"]: p["status"] for p in plugins}["minisearch"] == "active"
    root = workspace / "agents" / "ada"
    write(root, "MEMORY.md", "# Facts\n\nThe release train leaves on Thursdays.\n")
    write(root, "users/u1/memory/u1.md", "U1 keeps the spare bicycle key in the garage.\n")
    result = run_cli(["memory", "index", "--json"], **args)
    assert result.code == 0, result.err
    files = list((workspace / ".goclaw" / "minisearch").glob("*.json"))
    assert len(files) == 1 and "bicycle" in files[0].read_text()  # its own index, on disk
    result = run_cli(["memory", "search", "bicycle key", "--agent", "ada", "--user", "u1", "--json"], **args)
    assert result.code == 0, result.err
    hits = json.loads(result.out)
    assert hits[0]["path"] == "users/u1/memory/u1.md" and hits[0]["scope"] == "user"
    result = run_cli(["memory", "search", "bicycle key", "--agent", "ada", "--json"], **args)
    assert all(h["scope"] == "agent" for h in json.loads(result.out))  # u1's chunk stays out of scope

    # Indexed while the built-in backend was selected: the next search catches up through the
    # IndexSource (version token moved, fingerprints differ) instead of reading any table.
    write(root, "memory/ferry.md", "The harbour ferry leaves at noon on Sundays.\n")
    (workspace / "goclaw.toml").write_text("")
    assert run_cli(["memory", "index"], **args).code == 0
    (workspace / "goclaw.toml").write_text('[plugins.memory]\nbackend = "minisearch"\n')
    result = run_cli(
        ["memory", "search", "ferry noon", "--agent", "ada", "--channel", "lexical", "--json"], **args
    )
    assert result.code == 0, result.err
    assert [h["path"] for h in json.loads(result.out)] == ["memory/ferry.md"]


def test_same_ranking_and_scores_as_the_builtin_exact_backend(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a corpus where BM25's IDF, term frequency and length normalisation all matter, the
    from-scratch backend ranks and scores exactly like the SQLite backend's exact index."""
    from goclaw.engine import Engine

    monkeypatch.delenv("GOCLAW_PLUGINS__MEMORY__BACKEND")
    with Engine.open(workspace, plugins={"memory": {"backend": "minisearch", "rerank": "none"}}) as mini:
        root = mini.agent_dir(mini.agents.create("ada"))
        for i in range(24):
            words = ["ledger"] * (1 + i % 4) + ["tomato"] * (i % 3) + ["budget"] * (i % 5 == 0)
            filler = " ".join(["review", "quarterly", "meeting", "notes"][: 1 + i % 4] * (1 + i % 6))
            write(root, f"memory/n{i:02d}.md", f"{' '.join(words)} {filler} entry {i}.\n")
        write(root, "users/u1/MEMORY.md", "U1's ledger tomato budget.\n")
        mini.memory.index("ada")
        got = {}
        for user in (None, "u1"):
            for channel in ("hybrid", "lexical", "vector"):
                hits = mini.memory.search("tomato ledger budget", "ada", user, channel=channel, limit=20)
                got[(user, channel)] = [(h.path, round(h.score, 4)) for h in hits]
        assert mini.memory.backend.name == "minisearch"
    with Engine.open(workspace, plugins={"memory": {"backend": "sqlite", "rerank": "none"}}) as exact:
        for (user, channel), hits in got.items():
            want = exact.memory.search("tomato ledger budget", "ada", user, channel=channel, limit=20)
            assert hits == [(h.path, round(h.score, 4)) for h in want], (user, channel)
