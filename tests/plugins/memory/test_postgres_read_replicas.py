"""Memory searches on a read-only PostgreSQL server, as on a read replica: every connection of
the searching engine has ``default_transaction_read_only = on``, so any write it tried would
fail. Its searches of every kind equal those of an engine on the writable server, under both
search backends; a write made elsewhere is found by its next search; a database that lacks
the ``postgresql`` backend's triggers gets a one-line error saying where to install them, or
to search with ``inprocess`` instead, and either works."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from goclaw.engine import Engine
from goclaw.errors import StoreError
from goclaw_memory.testing.helpers import run_cli
from tests.memory_helpers import search_all, seed_agent

pytestmark = pytest.mark.postgres

BACKENDS = ["postgresql", "inprocess"]


def read_only(url: str) -> str:
    """``url`` with every connection's transactions read-only (as a hot standby's are)."""
    option = "-cdefault_transaction_read_only%3Don"
    if "options=" in url:
        return url.replace("options=", f"options={option}%20", 1)
    return f"{url}{'&' if '?' in url else '?'}options={option}"


def open_engine(workspace: Path, url: str, backend: str) -> Any:
    return Engine.open(workspace, url, plugins={"memory": {"backend": backend}})


@pytest.fixture
def primary(pg_schema_url: str, tmp_path: Path) -> Any:
    """The writable server's engine (``postgresql`` backend: its triggers are installed), with two
    agents of every kind of memory."""
    (tmp_path / "primary").mkdir()
    eng = open_engine(tmp_path / "primary", pg_schema_url, "postgresql")
    seed_agent(eng, "ada", kettles=4)
    seed_agent(eng, "bob", kettles=1)
    yield eng
    eng.close()


@pytest.fixture
def replica(request: pytest.FixtureRequest, primary: Any, pg_schema_url: str, tmp_path: Path) -> Any:
    """A search process of its own (another workspace) on read-only connections."""
    (tmp_path / "replica").mkdir()
    eng = open_engine(tmp_path / "replica", read_only(pg_schema_url), request.param)
    with eng.db.engine.connect() as c:
        assert c.execute(text("SHOW transaction_read_only")).scalar() == "on"
    yield eng
    eng.close()


@pytest.mark.parametrize("replica", BACKENDS, indirect=True)
def test_every_search_on_a_read_only_server_equals_the_writable_ones(
    primary: Any, replica: Any, pg_schema_url: str, tmp_path: Path
) -> None:
    backend = replica.memory.backend.name
    writable = primary
    if backend != "postgresql":
        (tmp_path / "writable").mkdir()
        writable = open_engine(tmp_path / "writable", pg_schema_url, backend)
    try:
        for agent in ("ada", "bob"):
            want = search_all(writable, agent)
            assert all(want)  # every search finds something
            assert {h["tier"] for hits in want for h in hits} == {"document", "episodic", "kg"}
            assert search_all(replica, agent) == want
    finally:
        if writable is not primary:
            writable.close()


def documents(eng: Any, query: str, agent: str, **kw: Any) -> list[Any]:
    return [h for h in eng.memory.search(query, agent, **kw) if h.tier == "document"]


@pytest.mark.parametrize("replica", BACKENDS, indirect=True)
def test_a_write_on_the_primary_is_found_by_the_replicas_next_search(primary: Any, replica: Any) -> None:
    assert not documents(replica, "walrus", "ada", channel="lexical")
    assert not documents(replica, "walrus", "ada", filters={"tags": ["zoo"]})
    primary.memory.writer.add("ada", "The walrus naps by the harbour.", tags=["zoo"])
    found = documents(replica, "walrus", "ada", channel="lexical")
    assert [h.snippet.splitlines()[-1] for h in found] == ["The walrus naps by the harbour."]
    assert [h.id for h in documents(replica, "walrus", "ada", filters={"tags": ["zoo"]})] == [found[0].id]
    assert not documents(replica, "walrus", "bob", channel="lexical")


@pytest.mark.parametrize("replica", ["inprocess"], indirect=True)
def test_a_write_on_a_read_only_server_fails_in_one_line(replica: Any) -> None:
    with pytest.raises(StoreError, match=r"^the database is read-only \(.*\): cannot execute"):
        replica.memory.writer.add("ada", "The walrus naps by the harbour.")


def test_a_read_only_server_without_the_triggers_says_where_to_install_them(
    pg_schema_url: str, tmp_path: Path
) -> None:
    (tmp_path / "primary").mkdir()
    (tmp_path / "replica").mkdir()
    # Written under inprocess only: the postgresql backend's triggers never installed.
    primary = open_engine(tmp_path / "primary", pg_schema_url, "inprocess")
    try:
        seed_agent(primary, "ada", kettles=2)
        want = [h.as_json() for h in primary.memory.search("kettle", "ada")]
        # The replica searches with the default backend (postgresql on PostgreSQL).
        args = ["memory", "search", "kettle", "--agent", "ada", "--json"]
        replica_url = read_only(pg_schema_url)
        result = run_cli(args, workspace=tmp_path / "replica", database_url=replica_url)
        assert result.code != 0 and "Traceback" not in result.err
        lines = result.err.strip().splitlines()
        assert len(lines) == 1 and "read-only" in lines[0] and "goclaw memory doctor --repair" in lines[0]
        assert 'backend = "inprocess"' in lines[0]
        # Either way out the message names works: inprocess on the replica ...
        (tmp_path / "replica" / "goclaw.toml").write_text('[plugins.memory]\nbackend = "inprocess"\n')
        result = run_cli(args, workspace=tmp_path / "replica", database_url=replica_url)
        assert result.code == 0, result.err
        assert json.loads(result.out) == want
        (tmp_path / "replica" / "goclaw.toml").unlink()
        # ... or the repair on the primary, after which the default backend searches the replica.
        fixer = open_engine(tmp_path / "primary", pg_schema_url, "auto")
        try:
            assert fixer.memory.backend.name == "postgresql"
            fixer.memory.doctor(repair=True)
        finally:
            fixer.close()
        replica = open_engine(tmp_path / "replica", replica_url, "auto")
        try:
            assert replica.memory.backend.name == "postgresql"
            assert [h.as_json() for h in replica.memory.search("kettle", "ada")] == want
        finally:
            replica.close()
    finally:
        primary.close()


def test_a_read_only_server_refuses_the_migrations_in_one_line(pg_schema_url: str, tmp_path: Path) -> None:
    # An empty schema: opening goclaw on it would create every table.
    result = run_cli(["agent", "list"], workspace=tmp_path, database_url=read_only(pg_schema_url))
    assert result.code != 0 and "Traceback" not in result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "could not migrate" in lines[0] and "read-only" in lines[0], result.err
