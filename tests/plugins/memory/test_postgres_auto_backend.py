"""On PostgreSQL ``auto`` selects ``postgresql`` (docs/decisions.md); ``inprocess`` stays an
option for a single host: the exact engine in memory, its index saved in the workspace, the
database the source of truth. What an ``inprocess`` user relies on: another process's writes
are seen, the saved index is where the docs say, ``goclaw memory index`` leaves one behind, a
workspace where it cannot be saved still searches, and the per-search reads survive a dropped
connection."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text

from tests.helpers import run_cli
from tests.memory_helpers import write

pytestmark = pytest.mark.postgres

NOTES = {
    "memory/ferry.md": "The harbour ferry leaves at noon on Sundays.\n",
    "memory/kettle.md": "The kettle is in the left cupboard above the sink.\n",
    "memory/bike.md": "Ada's bicycle is locked in the shed behind the garage.\n",
}


@pytest.fixture
def pg(pg_schema_url: str, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """An engine on PostgreSQL with backend ``inprocess`` (for every engine and process the test
    opens: the environment) and agent "ada" indexed."""
    from goclaw.engine import Engine

    monkeypatch.setenv("GOCLAW_PLUGINS__MEMORY__BACKEND", "inprocess")
    eng = Engine.open(workspace, pg_schema_url)
    eng.agents.create("ada")
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    for rel, body in NOTES.items():
        write(root, rel, body)
    eng.memory.index("ada")
    yield eng
    eng.close()


def _open(workspace: Path, url: str) -> Any:
    from goclaw.engine import Engine

    return Engine.open(workspace, url)


def _saved(eng: Any) -> Path:
    path = eng.memory.backend.saved_index(eng.agents.get("ada").id)
    assert path is not None
    return Path(path)


def test_auto_is_postgresql_on_postgresql(
    pg: Any, pg_schema_url: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the default settings a process searches with ``postgresql``: its first search
    answers without building or loading an index (none saved by it), ranked as ``inprocess``
    ranks."""
    from goclaw_memory.settings import resolve_backend

    assert resolve_backend("auto", "postgresql") == "postgresql"
    assert resolve_backend("auto", "sqlite") == "sqlite"
    assert resolve_backend("inprocess", "postgresql") == "inprocess"
    want = [(h.path, h.start_line) for h in pg.memory.search("when does the ferry leave", "ada")]
    monkeypatch.delenv("GOCLAW_PLUGINS__MEMORY__BACKEND")
    (workspace / "other").mkdir()
    default = _open(workspace / "other", pg_schema_url)
    try:
        assert default.plugin_settings("memory").backend == "auto"
        assert default.memory.backend.name == "postgresql"
        hits = default.memory.search("when does the ferry leave", "ada")
        assert [(h.path, h.start_line) for h in hits] == want
        assert want[0][0] == "memory/ferry.md"
        assert not (workspace / "other" / ".goclaw" / "memory-index").exists()
    finally:
        default.close()


def test_the_index_is_saved_in_the_workspace_and_loaded_by_the_next_process(
    pg: Any, pg_schema_url: str, workspace: Path
) -> None:
    saved = _saved(pg)
    assert (saved / "meta.json").is_file()
    assert saved.parent.parent == workspace / ".goclaw" / "memory-index"
    # No HNSW index: inprocess searches in memory (building one costs ~30 s / 100k).
    with pg.db.engine.connect() as conn:
        hnsw = conn.execute(
            text(
                "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() "
                "AND tablename = 'memory_chunks' AND indexdef ILIKE '%hnsw%'"
            )
        ).scalar_one()
    assert hnsw == 0
    first = [(h.path, h.score) for h in pg.memory.search("kettle cupboard", "ada")]
    again = _open(workspace, pg_schema_url)
    try:
        assert [(h.path, h.score) for h in again.memory.search("kettle cupboard", "ada")] == first
        assert again.memory.backend.loads == 0  # loaded, nothing read from the table
    finally:
        again.close()


def test_a_second_process_sees_the_first_process_write(pg: Any, pg_schema_url: str, workspace: Path) -> None:
    """This process holds the index in memory; another process (a real one, inprocess too)
    writes a note and indexes it: the next search here finds it, without a restart."""
    assert not pg.memory.search("lighthouse keeper", "ada", channel="lexical")
    root = Path(pg.agent_dir(pg.agents.get("ada")))
    write(root, "memory/lighthouse.md", "The lighthouse keeper retires in March.\n")
    env = {**os.environ, "GOCLAW_DATABASE_URL": pg_schema_url}
    assert env["GOCLAW_PLUGINS__MEMORY__BACKEND"] == "inprocess"
    cli = [sys.executable, "-c", "from goclaw.cli import main; main()"]
    done = subprocess.run(
        [*cli, "--workspace", str(workspace), "memory", "index", "--agent", "ada"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    hits = pg.memory.search("lighthouse keeper", "ada")
    assert hits and hits[0].path == "memory/lighthouse.md"


def test_memory_index_leaves_a_saved_index_even_when_nothing_changed(
    pg: Any, pg_schema_url: str, workspace: Path
) -> None:
    """An agent indexed elsewhere (another workspace, another backend) has chunks but no saved
    index here: ``goclaw memory index`` saves one, so the next first search loads it."""
    import shutil

    shutil.rmtree(workspace / ".goclaw" / "memory-index")
    result = run_cli(["memory", "index", "--agent", "ada"], workspace=workspace, database_url=pg_schema_url)
    assert result.code == 0, result.err
    assert (_saved(pg) / "meta.json").is_file()
    later = _open(workspace, pg_schema_url)
    try:
        assert later.memory.search("bicycle shed", "ada")[0].path == "memory/bike.md"
        assert later.memory.backend.loads == 0
    finally:
        later.close()


def test_an_unwritable_index_folder_costs_one_warning_and_search_goes_on(
    pg: Any, pg_schema_url: str, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Where the workspace cannot hold the saved index (read-only; here a file stands where its
    folder goes, which stops root too), every search still answers from memory, the failure
    is logged once, and the index is not re-consolidated and re-written on every catch-up."""
    import shutil

    shutil.rmtree(workspace / ".goclaw" / "memory-index")
    (workspace / ".goclaw" / "memory-index").write_text("not a folder", encoding="utf-8")
    eng = _open(workspace, pg_schema_url)
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    try:
        with caplog.at_level(logging.WARNING):
            assert eng.memory.search("ferry", "ada")[0].path == "memory/ferry.md"  # built, not saved
            for i in range(3):  # another process's writes: each search catches up
                write(root, f"memory/extra{i}.md", f"Extra note {i}: the ferry ticket costs {i} euros.\n")
                other = _open(workspace, pg_schema_url)
                other.memory.index("ada")
                other.close()
                hits = eng.memory.search(f"ferry ticket costs {i} euros", "ada")
                assert hits[0].path == f"memory/extra{i}.md"
        warnings = [r for r in caplog.records if "could not save the memory index" in r.getMessage()]
        # One per backend: this engine's (not one per catch-up) and the three indexing engines'.
        assert len(warnings) == 4, [r.getMessage() for r in warnings]
        assert not (workspace / ".goclaw" / "memory-index").is_dir()
        # The folder becomes writable; once RETRY_SAVE has passed the next catch-up saves.
        (workspace / ".goclaw" / "memory-index").unlink()
        eng.memory.backend._no_save_until = 0.0  # as if RETRY_SAVE (10 minutes) had passed
        write(root, "memory/extra9.md", "Extra note 9: the ferry ticket costs 9 euros.\n")
        other = _open(workspace, pg_schema_url)
        other.memory.index("ada")  # a small change: the indexing process does not save it
        other.close()
        assert eng.memory.search("ferry ticket costs 9 euros", "ada")[0].path == "memory/extra9.md"
        assert (_saved(eng) / "meta.json").is_file()
    finally:
        eng.close()


def test_records_carry_exact_vectors_read_in_binary(pg: Any) -> None:
    """The catch-up reads vectors in pgvector's binary form: bit-identical to what was embedded,
    native float32; a vector of another embedding space is left out."""
    from goclaw_memory.source import ChunkTableSource

    agent = pg.agents.get("ada").id
    embedder = pg.embedder()
    space = (embedder.provider, embedder.model, int(embedder.dim))
    source = ChunkTableSource(pg)
    ids = sorted(source.fingerprints(agent, space))
    records = {r.path: r for r in source.records(agent, ids, space)}
    assert sorted(records) == sorted(NOTES)
    for path, body in NOTES.items():
        rec = records[path]
        assert rec.space == space and rec.vector.dtype == np.float32
        assert rec.vector.dtype.byteorder in ("=", "<")
        np.testing.assert_array_equal(
            rec.vector, np.asarray(embedder.embed([body.strip()])[0], dtype=np.float32)
        )
    other = ("someone", "else", int(embedder.dim))
    assert all(r.vector is None and r.space is None for r in source.records(agent, ids, other))


def test_per_search_reads_survive_a_dropped_connection(pg: Any) -> None:
    """The version token and the winners' rows are read on one direct connection (one round
    trip each instead of three through the pool); if the server drops it, it is reopened."""
    from goclaw_memory.pg_direct import direct

    assert pg.memory.search("kettle", "ada")[0].path == "memory/kettle.md"
    conn = direct(pg)
    pid = conn.query("SELECT pg_backend_pid()", ())[0][0]
    with pg.db.engine.connect() as admin:
        admin.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
    assert pg.memory.search("kettle", "ada")[0].path == "memory/kettle.md"
    assert conn.query("SELECT pg_backend_pid()", ())[0][0] != pid


def test_chunks_without_a_version_token_are_found(pg: Any, pg_schema_url: str, workspace: Path) -> None:
    """Rows written before version tokens existed (an upgraded database): the first search of a
    new process reads them, instead of trusting an empty index whose token "" matches."""
    import shutil

    with pg.db.engine.begin() as conn:
        conn.execute(text("DELETE FROM worker_state WHERE worker = 'goclaw.memory.index'"))
    shutil.rmtree(workspace / ".goclaw" / "memory-index")
    fresh = _open(workspace, pg_schema_url)
    try:
        assert fresh.memory.search("ferry noon", "ada")[0].path == "memory/ferry.md"
    finally:
        fresh.close()


def test_pg_vectors_decodes_pgvector_binary_form() -> None:
    """A batch of equal lengths is decoded as rows of one array; mixed lengths (a damaged row)
    and missing vectors one by one, each exact."""
    import struct

    from goclaw_memory.source import pg_vectors

    def binary(values: list[float]) -> bytes:
        return struct.pack(f">HH{len(values)}f", len(values), 0, *values)

    a, b, c = [0.5, -1.25, 3.0], [1e-3, 2.0, -0.0], [7.0, 8.0]
    same = pg_vectors([binary(a), None, binary(b)])
    assert same[1] is None and same[0].dtype == np.float32
    np.testing.assert_array_equal(same[0], np.asarray(a, dtype=np.float32))
    np.testing.assert_array_equal(same[2], np.asarray(b, dtype=np.float32))
    mixed = pg_vectors([binary(a), binary(c)])
    np.testing.assert_array_equal(mixed[1], np.asarray(c, dtype=np.float32))
    assert pg_vectors([None, None]) == [None, None] and pg_vectors([]) == []


def test_the_direct_connection_does_not_keep_an_unclosed_engine_alive(
    pg_schema_url: str, workspace: Path
) -> None:
    """An engine dropped without ``close()`` after a direct read is freed, its connection closed: the
    direct connection, a value of a dictionary weakly keyed by its engine, held the engine
    strongly, so the entry (engine, pool, connection) lived as long as the process."""
    import gc
    import weakref

    from goclaw_memory import pg_direct

    eng = _open(workspace, pg_schema_url)
    assert pg_direct.direct(eng).query("SELECT 1", ()) == [(1,)]
    conn = pg_direct.direct(eng)._conn
    gone = weakref.ref(eng)
    del eng
    gc.collect()
    assert gone() is None
    assert conn.closed


def test_a_search_reads_its_rows_and_the_version_token_in_one_round_trip(
    pg: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the index loaded, a search runs on it and checks the version token with its rows:
    one round trip to the server, not two; a write by another engine still shows at once
    (the token read with the rows has moved: the search catches up and runs again)."""
    from goclaw_memory.pg_direct import DirectConnection

    assert pg.memory.search("bicycle shed", "ada")  # loads the index
    trips: list[int] = []
    real = DirectConnection.queries

    def counted(self: Any, statements: Any, **kw: Any) -> Any:
        trips.append(len(statements))
        return real(self, statements, **kw)

    monkeypatch.setattr(DirectConnection, "queries", counted)
    assert pg.memory.search("bicycle shed", "ada")[0].path == "memory/bike.md"
    assert trips == [2]  # the token and the rows together
    other = _open(pg.workspace, str(pg.db.engine.url.render_as_string(hide_password=False)))
    try:
        write(
            Path(other.agent_dir(other.agents.get("ada"))),
            "memory/kite.md",
            "The red kite nests by the mill.\n",
        )
        other.memory.index("ada")
    finally:
        other.close()
    trips.clear()
    hits = pg.memory.search("red kite mill", "ada")
    assert hits and hits[0].path == "memory/kite.md"
    assert trips[0] == 2 and len(trips) > 1  # the stale try, then the catch-up and the search


def test_writes_under_inprocess_pay_for_no_statistics_triggers(pg: Any) -> None:
    """Only the ``postgresql`` backend reads the BM25 statistics and postings: under
    ``inprocess`` no trigger keeps them, and writes leave their tables empty."""
    from goclaw_memory.pg_stats import TRIGGER_NAMES, missing_triggers

    assert pg.memory.backend.name == "inprocess"
    pg.memory.writer.add("ada", "Remember: the harbour ferry leaves at noon.")
    with pg.db.engine.connect() as c:
        assert missing_triggers(c) == list(TRIGGER_NAMES)
        for table in ("memory_term_stats", "memory_agent_stats", "memory_packed", "memory_delta"):
            assert c.execute(text(f"SELECT count(*) FROM {table}")).scalar() == 0
