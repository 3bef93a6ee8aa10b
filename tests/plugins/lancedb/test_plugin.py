"""The ``lancedb`` backend's own guarantees (plugin ``goclaw.lancedb``): it
keeps its own index through the write contract and never reads the chunk table to search; it
catches up when it fell behind the database; it gives the SQLite backend's exact results;
disabling it or missing the extra gives one-line errors, and ``forget`` leaves no trace in its
folder. (tests/plugins/lancedb/test_backend_suite.py runs the shared backend suite on it.)"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import event

pytest.importorskip("lancedb")

from tests.helpers import run_cli
from tests.memory_helpers import write

LANCE = {"memory": {"backend": "lancedb"}}
FACTS = [
    "The harbour ferry leaves at noon on Sundays.",
    "Invoices are sent on the first business day of each month.",
    "The staging server moved to the Frankfurt region last autumn.",
    "Remember to water the tomato plants on the balcony twice a week.",
    "The vault access code for the archive is XK-4471-ZQ.",
]


def ada_dir(eng: Any) -> Path:
    return Path(eng.agent_dir(eng.agents.get("ada")))


def seed(eng: Any) -> Path:
    root = ada_dir(eng)
    for i, fact in enumerate(FACTS):
        write(root, f"memory/f{i}.md", f"# Fact {i}\n\n{fact}\n")
    write(root, "users/u1/memory/private.md", "U1 keeps the spare bicycle key in the garage.\n")
    return root


@contextmanager
def statements(eng: Any) -> Iterator[list[str]]:
    """Every SQL statement the engine's database runs inside the block."""
    seen: list[str] = []

    def spy(_conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
        seen.append(sql)

    event.listen(eng.db.engine, "before_cursor_execute", spy)
    try:
        yield seen
    finally:
        event.remove(eng.db.engine, "before_cursor_execute", spy)


def test_search_never_reads_the_chunk_table(make_engine: Any) -> None:
    eng = make_engine(plugins=LANCE)
    eng.agents.create("ada")
    root = seed(eng)
    eng.memory.index("ada")
    backend = eng.memory.backend
    assert backend.name == "lancedb" and backend.folder.is_dir()
    with statements(eng) as seen:
        for channel in ("hybrid", "lexical", "vector"):
            assert eng.memory.search("when does the ferry leave", "ada", channel=channel)
        hits = eng.memory.search("bicycle key garage", "ada", "u1")
        assert hits[0].path == "users/u1/memory/private.md"
        assert eng.memory.search("XK-4471-ZQ", "ada")[0].path == "memory/f4.md"
        eng.agents.get("ada")  # one statement the spy must see (searches may send none)
    assert seen and not [s for s in seen if "memory_chunks" in s], seen
    assert backend.resyncs == 0
    # An edit, a deletion and a new file: patched through apply_changes, still no table reads.
    write(root, "memory/f0.md", "# Fact 0\n\nThe harbour ferry now leaves at one o'clock.\n")
    (root / "memory/f1.md").unlink()
    write(root, "memory/new.md", "The lighthouse keeper logs every fog horn test.\n")
    eng.memory.index("ada")
    assert backend.patches >= 1
    with statements(eng) as seen:
        assert eng.memory.search("fog horn lighthouse", "ada")[0].path == "memory/new.md"
        assert "memory/f1.md" not in {h.path for h in eng.memory.search("invoices business day", "ada")}
        assert "one o'clock" in eng.memory.search("ferry", "ada", channel="lexical")[0].snippet
    assert not [s for s in seen if "memory_chunks" in s]
    assert backend.resyncs == 0


def test_catches_up_after_indexing_with_the_plugin_disabled(make_engine: Any) -> None:
    eng = make_engine(plugins=LANCE)
    eng.agents.create("ada")
    root = seed(eng)
    eng.memory.index("ada")
    assert eng.memory.search("ferry", "ada")[0].path == "memory/f0.md"
    eng.close()
    # Indexing runs while the plugin is disabled: the LanceDB table does not see it.
    off = make_engine(plugins={"disable": ["goclaw.lancedb"]})
    assert off.memory.backend.name != "lancedb"
    write(root, "memory/f0.md", "# Fact 0\n\nThe volcano observatory sends readings every hour.\n")
    (root / "memory/f3.md").unlink()
    off.memory.index("ada")
    assert off.memory.search("volcano observatory", "ada")[0].path == "memory/f0.md"
    off.close()
    # Back on: the first search notices, resyncs from the database and says so once.
    on = make_engine(plugins=LANCE)
    response = on.memory.search_response("volcano observatory readings", "ada")
    assert response.hits[0].path == "memory/f0.md"
    assert any("LanceDB index was behind the database" in n for n in response.notes), response.notes
    assert on.memory.backend.resyncs == 1
    assert "memory/f3.md" not in {h.path for h in on.memory.search("tomato balcony", "ada", limit=20)}
    with statements(on) as seen:
        again = on.memory.search_response("volcano observatory readings", "ada")
    assert not again.notes and not [s for s in seen if "memory_chunks" in s]


def test_a_crash_between_the_database_and_the_lancedb_write_is_repaired(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng = make_engine(plugins=LANCE)
    eng.agents.create("ada")
    root = seed(eng)
    eng.memory.index("ada")
    write(root, "memory/f2.md", "# Fact 2\n\nThe staging server moved to Lisbon.\n")

    def crash(_changes: Any) -> None:
        raise KeyboardInterrupt("killed after the database commit")

    monkeypatch.setattr(eng.memory.backend, "apply_changes", crash)
    with pytest.raises(KeyboardInterrupt):
        eng.memory.index("ada")
    eng.close()
    fresh = make_engine(plugins=LANCE)
    response = fresh.memory.search_response("staging server Lisbon", "ada")
    assert response.hits[0].path == "memory/f2.md" and "Lisbon" in response.hits[0].snippet
    assert any("behind the database" in n for n in response.notes)
    assert "Frankfurt" not in " ".join(h.snippet for h in fresh.memory.search("staging server", "ada"))


@pytest.mark.parametrize("method", ["weighted", "rrf", "minmax", "zscore"])
def test_results_equal_the_sqlite_backends(make_engine: Any, backend: str, method: str) -> None:
    """300 chunks over a small vocabulary, top 2 (so each channel's first candidates are not
    enough and the weighted fusion must widen them): the same ids and scores as the built-in
    exact backend, every fusion method."""
    if backend != "sqlite":
        pytest.skip("compared with the SQLite backend's exact in-memory index")
    rng = np.random.default_rng(7)
    words = "alpha beta gamma delta ledger tomato budget ferry harbour garden invoice audit server"
    words += " region river mountain"
    eng = make_engine(plugins={"memory": {"backend": "sqlite", "fusion": method}})
    eng.agents.create("ada")
    root = ada_dir(eng)
    for i in range(300):
        body = " ".join(rng.choice(words.split(), size=int(rng.integers(4, 60))))  # few exact BM25 ties
        write(root, f"memory/n{i:03d}.md", f"Note {i}: {body}.\n")
    write(root, "users/u1/memory/u.md", "ledger tomato budget ferry for u1.\n")
    eng.memory.index("ada")
    lance = make_engine(plugins={"memory": {"backend": "lancedb", "fusion": method}})
    lance.memory.index("ada")  # nothing changed: the table is built by the first search
    queries = ["ledger tomato budget", "harbour ferry river", "audit server", "gamma", "mountain invoice"]
    for q in queries:
        for user in (None, "u1"):
            a = eng.memory.search(q, "ada", user, limit=2)
            b = lance.memory.search(q, "ada", user, limit=2)
            assert [round(h.score, 4) for h in b] == pytest.approx([round(h.score, 4) for h in a], abs=2e-4)
            tied = {h.score for h in a if sum(abs(h.score - o.score) < 1e-5 for o in a) > 1}
            assert [h.chunk_id for h in b if h.score not in tied] == [
                h.chunk_id for h in a if h.score not in tied
            ], (q, user)


def test_disabled_or_missing_extra_is_a_one_line_error(
    make_engine: Any, workspace: Path, database_url: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng = make_engine()
    eng.agents.create("ada")
    write(ada_dir(eng), "MEMORY.md", "The release train leaves on Thursdays.\n")
    args = {"workspace": workspace, "database_url": database_url}
    assert run_cli(["memory", "index"], **args).code == 0
    monkeypatch.setenv("GOCLAW_PLUGINS__MEMORY__BACKEND", "lancedb")
    ok = run_cli(["memory", "search", "release train", "--agent", "ada"], **args)
    assert ok.code == 0 and "MEMORY.md" in ok.out, ok.err
    monkeypatch.setenv("GOCLAW_PLUGINS__DISABLE", '["goclaw.lancedb"]')
    off = run_cli(["memory", "search", "release train", "--agent", "ada"], **args)
    assert off.code != 0 and "Traceback" not in off.err
    assert "unknown memory search backend 'lancedb'" in off.err and len(off.err.strip().splitlines()) == 1
    monkeypatch.delenv("GOCLAW_PLUGINS__DISABLE")
    monkeypatch.setitem(sys.modules, "lancedb", None)  # as if the extra were not installed
    missing = run_cli(["memory", "search", "release train", "--agent", "ada"], **args)
    assert missing.code != 0 and "Traceback" not in missing.err
    assert "pip install 'goclaw[lancedb]'" in missing.err and len(missing.err.strip().splitlines()) == 1
    monkeypatch.delenv("GOCLAW_PLUGINS__MEMORY__BACKEND")  # back to the default: still works
    assert run_cli(["memory", "search", "release train", "--agent", "ada"], **args).code == 0


def test_forget_leaves_no_trace_in_the_lancedb_folder(make_engine: Any) -> None:
    from goclaw.forget import forget_agent, forget_user

    eng = make_engine(plugins=LANCE)
    eng.agents.create("ada")
    seed(eng)
    write(ada_dir(eng), "users/u2/memory/secret.md", "U2 passport number ZEBRA-PASSPORT-9931.\n")
    eng.memory.index("ada")
    assert eng.memory.search("ZEBRA-PASSPORT-9931", "ada", "u2")[0].path == "users/u2/memory/secret.md"
    folder = eng.memory.backend.folder

    def leaked() -> list[Path]:
        return [p for p in folder.rglob("*") if p.is_file() and b"ZEBRA-PASSPORT" in p.read_bytes()]

    assert leaked()
    forget_user(eng, "u2", dry_run=False)
    assert not [h for h in eng.memory.search("ZEBRA-PASSPORT-9931", "ada", "u2") if h.scope == "user"]
    assert not leaked()
    assert eng.memory.search("ferry", "ada")[0].path == "memory/f0.md"
    # Forgetting the agent drops its table.
    forget_agent(eng, "ada", dry_run=False)
    assert not [p for p in folder.rglob("*") if p.is_file() and b"harbour ferry" in p.read_bytes()]
    assert not list(folder.glob("chunks_*"))


def test_a_row_written_twice_is_healed_by_the_next_resync(make_engine: Any) -> None:
    """Two writers that were not serialised can leave an id twice in the table; a resync by
    fingerprint deletes every copy and adds the row once."""
    eng = make_engine(plugins=LANCE)
    eng.agents.create("ada")
    seed(eng)
    eng.memory.index("ada")
    backend = eng.memory.backend
    agent = eng.agents.get("ada").id
    at = backend._table(agent)
    table = at.open()
    n = table.count_rows()
    table.add(table.search().where("path = 'memory/f0.md'").limit(10).to_arrow())
    assert table.count_rows() == n + 1
    at.write_meta("a token the database never had", at.space_of(at.meta()))
    response = eng.memory.search_response("harbour ferry", "ada")
    assert [h.path for h in response.hits].count("memory/f0.md") == 1
    assert any("behind the database" in note for note in response.notes)
    assert at.open().count_rows() == n
