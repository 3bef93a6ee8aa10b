"""``goclaw memory doctor``: each problem provoked for real, then fixed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from goclaw_memory.doctor import DoctorReport, run_doctor
from tests.helpers import run_cli
from tests.memory_helpers import EmbedderPlugin, write


def _files(workspace: Path) -> None:
    write(workspace, "agents/helper/MEMORY.md", "# Facts\n\nThe loading dock code is DOCK-7781.\n")
    write(workspace, "agents/helper/memory/2026-10-01.md", "# 2026-10-01\n\nQuarterly review: Thursdays.\n")
    write(workspace, "agents/helper/memory/2026-10-02.md", "# 2026-10-02\n\nNew printer on floor two.\n")
    write(workspace, "agents/helper/users/bo/MEMORY.md", "# Bo\n\nBo prefers short answers in French.\n")


def _setup(make_engine: Any, workspace: Path, **kwargs: Any) -> Any:
    eng = make_engine(**kwargs)
    if not any(a.name == "helper" for a in eng.agents.list()):
        eng.agents.create("helper")
    _files(workspace)
    eng.memory.index("helper")
    return eng


def _by(report: DoctorReport, name: str) -> Any:
    (check,) = [c for c in report.checks if c.name == name]
    return check


def _sql(eng: Any, sql: str, **params: Any) -> None:
    with eng.db.engine.begin() as conn:
        conn.execute(text(sql), params)


def test_a_healthy_index_has_no_problem(make_engine: Any, workspace: Path, database_url: str | None) -> None:
    eng = _setup(make_engine, workspace)
    report = run_doctor(eng)
    assert report.problems == [], [c.message for c in report.problems]
    assert _by(report, "freshness").message == "4 files indexed, all current"
    assert _by(report, "embeddings").details["spaces"][0]["chunks"] == 4
    assert _by(report, "full-text").status == "ok"
    if eng.db.backend == "postgresql":
        # The default backend (postgresql) searches with HNSW and the BM25 statistics, and
        # saves no index.
        assert [c.status for c in report.checks if c.name == "hnsw"] == ["ok"]
        assert _by(report, "pg-stats").status == "ok"
        assert not [c for c in report.checks if c.name == "saved-index"]
    else:
        assert _by(report, "saved-index").message == "saved index current (4 chunks)"
    result = run_cli(["memory", "doctor", "--json"], workspace=workspace, database_url=database_url)
    assert result.code == 0, result.err
    assert json.loads(result.out)["ok"] is True
    result = run_cli(["memory", "doctor"], workspace=workspace, database_url=database_url)
    name = {"sqlite": "sqlite", "postgresql": "postgresql"}[eng.db.backend]
    assert f"[info] backend: memory search backend {name} (backend = 'auto' on {eng.db.backend})" in (
        result.out
    )


def test_files_changed_new_and_deleted_since_indexing(
    make_engine: Any, workspace: Path, database_url: str | None
) -> None:
    eng = _setup(make_engine, workspace)
    write(workspace, "agents/helper/memory/2026-10-01.md", "# 2026-10-01\n\nQuarterly review: Fridays.\n")
    write(workspace, "agents/helper/users/bo/memory/2026-10-03.md", "# new\n\nBo is in Lyon this week.\n")
    (workspace / "agents/helper/memory/2026-10-02.md").unlink()
    check = _by(run_doctor(eng, "helper"), "freshness")
    assert check.status == "problem"
    assert check.message == (
        "memory files differ from the index: 1 changed (memory/2026-10-01.md); "
        "1 new (users/bo/memory/2026-10-03.md); 1 deleted (memory/2026-10-02.md)"
    )
    assert check.fix == "goclaw memory index --agent helper"
    args = ["memory", "doctor", "--agent", "helper"]
    result = run_cli(args, workspace=workspace, database_url=database_url)
    assert result.code == 1
    assert "[FAIL] freshness (helper): memory files differ" in result.out
    assert "fix: goclaw memory index --agent helper" in result.out
    eng.memory.index("helper")
    assert _by(run_doctor(eng, "helper"), "freshness").status == "ok"


def test_vectors_of_another_model_and_missing_vectors(
    make_engine: Any, workspace: Path, database_url: str | None
) -> None:
    plugin = EmbedderPlugin()
    hash_config = {"embeddings": {"provider": "hash"}}
    hashed = _setup(make_engine, workspace, extra_plugins=[("testemb", plugin)], plugins=hash_config)
    write(workspace, "agents/helper/memory/2026-10-04.md", "# 2026-10-04\n\nNo vectors for this one.\n")
    make_engine(plugins={"embeddings": {"provider": "none"}}).memory.index("helper")
    static = make_engine()  # the configured default: the static 256-d model
    report = run_doctor(static, "helper")
    emb = _by(report, "embeddings")
    assert emb.status == "problem"
    assert "4 chunks hold vectors of another model (test-hash/hash-64 (64-d) x4)" in emb.message
    assert emb.fix is not None and emb.fix.startswith("goclaw memory index --agent helper")
    spaces = {(s["provider"], s["dim"]): s["chunks"] for s in emb.details["spaces"]}
    assert spaces == {("test-hash", 64): 4, (None, None): 1}
    vec = _by(report, "vectors")
    assert vec.status == "problem" and vec.message.startswith("5 of 5 chunks have no minilm")
    static.memory.index("helper")
    report = run_doctor(static, "helper")
    assert report.problems == [], [c.message for c in report.problems]
    assert hashed is not static


def test_broken_embedder_is_a_problem(make_engine: Any, workspace: Path) -> None:
    plugin = EmbedderPlugin()
    _setup(make_engine, workspace, plugins={"embeddings": {"provider": "none"}})
    eng = make_engine(plugins={"embeddings": {"provider": "nosuch"}}, extra_plugins=[("testemb", plugin)])
    emb = _by(run_doctor(eng, "helper"), "embeddings")
    assert emb.status == "problem" and emb.message.startswith("the embedding provider cannot start")
    assert emb.fix is not None and "[plugins.embeddings]" in emb.fix


def test_damaged_rows_are_found_and_repaired(
    make_engine: Any, workspace: Path, database_url: str | None
) -> None:
    eng = _setup(make_engine, workspace)
    _sql(eng, "UPDATE memory_documents SET chunk_count = chunk_count + 1 WHERE path = 'MEMORY.md'")
    _sql(eng, "UPDATE memory_chunks SET embedding_dim = 100 WHERE path = 'memory/2026-10-01.md'")
    report = run_doctor(eng, "helper")
    consistency = _by(report, "consistency")
    assert consistency.status == "problem"
    assert consistency.message.startswith("1 documents do not hold the chunks they record (MEMORY.md)")
    vectors = _by(report, "vectors")
    assert vectors.status == "problem"
    assert vectors.message == "1 stored vectors do not have their recorded dimension"
    assert vectors.fix == (
        "goclaw memory doctor --agent helper --repair, then goclaw memory index --agent helper"
    )
    result = run_cli(["memory", "doctor", "--repair"], workspace=workspace, database_url=database_url)
    assert "repaired: helper: forgot MEMORY.md" in result.out
    assert "repaired: helper: cleared 1 vectors of the wrong length" in result.out
    eng.memory.index("helper")
    report = run_doctor(eng, "helper")
    assert report.problems == [], [c.message for c in report.problems]
    assert eng.memory.search("DOCK-7781", "helper", channel="lexical")[0].path == "MEMORY.md"


def test_missing_and_stale_full_text_terms_are_found_and_indexed_again(
    make_engine: Any, workspace: Path
) -> None:
    eng = _setup(make_engine, workspace)
    # What a crash mid-backfill or a tokenizer upgrade leaves: no terms, or other terms.
    _sql(eng, "UPDATE memory_chunks SET lex = NULL WHERE path = 'MEMORY.md'")
    _sql(eng, "UPDATE memory_chunks SET lex = 'zzz' WHERE path = 'memory/2026-10-01.md'")
    shutil.rmtree(workspace / ".goclaw" / "goclaw.db.index", ignore_errors=True)  # SQLite's saved index
    broken = make_engine()  # searches the stored terms: the note is lost to full text
    hits = broken.memory.search("quarterly Thursdays", "helper", channel="lexical")
    assert "memory/2026-10-01.md" not in [h.path for h in hits]
    save = getattr(broken.memory.backend, "save", None)
    if save is not None:  # SQLite: an index persisted from the stale terms must not survive repair
        assert save(broken.agents.get("helper").id) is not None
    check = _by(run_doctor(eng), "full-text")
    assert check.status == "problem"
    assert check.message == (
        "1 chunks have no full-text terms; 1 of 3 sampled chunks carry terms the current tokenizer "
        "would not produce (was it upgraded?)"
    )
    assert check.fix == (
        "goclaw memory doctor --repair (indexes their files again, which recomputes the terms)"
    )
    report = run_doctor(eng, repair=True)
    assert report.repaired == ["helper: indexed 2 documents again (out-of-date full-text terms)"]
    assert _by(report, "full-text").status == "ok"
    fresh = make_engine()  # a new process builds its index from the stored terms
    assert fresh.memory.search("DOCK-7781", "helper", channel="lexical")[0].path == "MEMORY.md"
    assert fresh.memory.search("quarterly Thursdays", "helper", channel="lexical")[0].path == (
        "memory/2026-10-01.md"
    )


def test_postgres_full_text_and_hnsw_indexes(make_engine: Any, workspace: Path, backend: str) -> None:
    if backend != "postgresql":
        pytest.skip("PostgreSQL indexes")
    eng = _setup(make_engine, workspace, plugins={"memory": {"backend": "postgresql"}})
    _sql(eng, "DROP INDEX ix_memory_chunks_tsv")
    _sql(eng, "DROP INDEX ix_memory_chunks_hnsw_256")
    report = run_doctor(eng)
    fts = _by(report, "full-text")
    assert fts.status == "problem"
    assert fts.message == "no GIN index on memory_chunks.tsv: full-text search scans every row"
    (hnsw,) = [c for c in report.checks if c.name == "hnsw"]
    assert hnsw.status == "problem"
    assert hnsw.message == "no HNSW index for the 4 vectors of 256 dimensions: vector search scans every row"
    report = run_doctor(eng, repair=True)
    assert report.repaired == [
        "created the GIN index on memory_chunks.tsv",
        "built the HNSW index for 256-dimension vectors",
    ]
    assert report.problems == [], [c.message for c in report.problems]
    _sql(eng, "ALTER TABLE memory_chunks DROP COLUMN tsv")
    fts = _by(run_doctor(eng), "full-text")
    assert fts.status == "problem" and fts.message.startswith("memory_chunks has no tsv column")


def test_hnsw_is_neither_required_nor_built_for_inprocess(
    make_engine: Any, workspace: Path, backend: str
) -> None:
    """On PostgreSQL ``inprocess`` searches in memory: no HNSW index is built while indexing or
    repairing (~30 s per 100k chunks, and slower writes), and its absence is not a problem;
    switching to ``postgresql`` (the default) builds it at the next index run."""
    if backend != "postgresql":
        pytest.skip("PostgreSQL indexes")
    eng = _setup(make_engine, workspace, plugins={"memory": {"backend": "inprocess"}})
    (hnsw,) = [c for c in run_doctor(eng).checks if c.name == "hnsw"]
    assert hnsw.status == "info" and "none built" in hnsw.message
    report = run_doctor(eng, repair=True)
    assert report.repaired == [] and report.problems == []
    pg = make_engine()
    assert pg.memory.backend.name == "postgresql"
    (hnsw,) = [c for c in run_doctor(pg).checks if c.name == "hnsw"]
    assert hnsw.status == "problem"
    pg.memory.index("helper")  # nothing changed, but the postgresql backend builds its index
    assert [c.status for c in run_doctor(pg).checks if c.name == "hnsw"] == ["ok"]
    (hnsw,) = [c for c in run_doctor(eng).checks if c.name == "hnsw"]
    assert hnsw.status == "info" and "present for 256-d" in hnsw.message


def test_saved_index_missing_behind_and_current(
    make_engine: Any, workspace: Path, backend: str, database_url: str | None, in_memory_search: str
) -> None:
    if backend != "postgresql":
        pytest.skip("the inprocess backend's saved index")
    eng = _setup(make_engine, workspace)
    assert eng.memory.backend.name == in_memory_search == "inprocess"
    shutil.rmtree(workspace / ".goclaw" / "memory-index")
    check = _by(run_doctor(eng), "saved-index")
    assert check.status == "warning" and check.message.startswith("no saved index for 4 chunks")
    assert check.fix == "goclaw memory index --agent helper (saves the index)"
    result = run_cli(["memory", "index", "--agent", "helper"], workspace=workspace, database_url=database_url)
    assert result.code == 0, result.err
    assert _by(run_doctor(eng), "saved-index").status == "ok"
    # Another process indexes a small change: not saved (a reader catches up cheaply).
    write(workspace, "agents/helper/memory/2026-10-05.md", "# 2026-10-05\n\nThe lift is fixed.\n")
    make_engine().memory.index("helper")
    check = _by(run_doctor(eng), "saved-index")
    assert check.status == "info" and "(4 chunks) is behind the database (5 chunks)" in check.message


@pytest.mark.parametrize("meta", ["[]", '{"space": 7}', "n_alive"])
def test_a_saved_index_with_a_damaged_meta_is_reported_not_a_traceback(
    make_engine: Any, workspace: Path, backend: str, meta: str
) -> None:
    """meta.json that is JSON but not the index's (a list, a number where a list goes): the
    check says the saved index is unreadable; it raised AttributeError / TypeError / ValueError."""
    if backend != "postgresql":
        pytest.skip("the inprocess backend's saved index")
    eng = _setup(make_engine, workspace, plugins={"memory": {"backend": "inprocess"}})
    (folder,) = (workspace / ".goclaw" / "memory-index").glob("*/*.idx")
    if meta == "n_alive":  # the real meta, one count damaged
        real = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        meta = json.dumps(real | {"n_alive": "many"})
    (folder / "meta.json").write_text(meta, encoding="utf-8")
    check = _by(run_doctor(eng), "saved-index")
    assert check.status == "warning" and check.message.startswith("saved index unreadable")


def test_watcher_status(make_engine: Any, workspace: Path, backend: str) -> None:
    if backend != "sqlite":
        pytest.skip("same on both databases")
    eng = _setup(make_engine, workspace)
    assert _by(run_doctor(eng), "watcher").status == "info"
    watcher = eng.memory.watch("helper", debounce_ms=0)
    try:
        check = _by(run_doctor(eng), "watcher")
        assert check.status == "ok" and check.message.startswith("1 watcher(s) running")
        watcher.errors.append("helper: disk full")  # what a failed re-index records
        check = _by(run_doctor(eng), "watcher")
        assert check.status == "warning" and "disk full" in check.message
    finally:
        watcher.stop()
    assert _by(run_doctor(eng), "watcher").status == "info"


def test_cli_unknown_agent_is_one_line(workspace: Path) -> None:
    assert run_cli(["init"], workspace=workspace).code == 0
    result = run_cli(["memory", "doctor", "--agent", "nobody"], workspace=workspace)
    assert result.code != 0 and result.err.startswith("error: unknown agent 'nobody'")
    assert result.err.count("\n") == 1


def test_doctor_says_whether_the_vector_scan_is_compiled(
    make_engine: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wheel built without a C compiler searches on the numpy path: doctor says so, with the
    fix, instead of leaving it to ``pip -v``; for the default backend of either database (the
    ``postgresql`` backend scores its postings with the compiled kernels)."""
    from goclaw_search import vecq

    eng = _setup(make_engine, workspace)
    monkeypatch.delenv("GOCLAW_SEARCH_NUMPY", raising=False)
    monkeypatch.setattr(vecq, "compiled", None)
    scan = _by(run_doctor(eng), "vector scan")
    assert scan.status == "warning" and "numpy path" in scan.message and "C compiler" in scan.fix
    slower = {"sqlite": "vector and hybrid searches", "postgresql": "score the fetched postings"}
    assert slower[eng.memory.backend.name] in scan.message
    monkeypatch.setattr(vecq, "compiled", object())
    assert _by(run_doctor(eng), "vector scan").status == "ok"
    monkeypatch.setenv("GOCLAW_SEARCH_NUMPY", "1")
    monkeypatch.setattr(vecq, "compiled", None)
    assert _by(run_doctor(eng), "vector scan").status == "info"


def test_heading_paths_in_the_terms_are_not_stale_and_survive_a_repair(
    make_engine: Any, workspace: Path
) -> None:
    """A chunk's terms start with its heading path (not stored with the chunk): the check does
    not take them for a tokenizer upgrade, and a repair of really stale terms restores them."""
    eng = _setup(make_engine, workspace)
    root = Path(eng.agent_dir(eng.agents.get("helper")))
    sections = "\n\n".join(
        f"## Section {i}\n\n" + " ".join(f"Paragraph {i} line {j} about harbour ferries." for j in range(12))
        for i in range(6)
    )
    (root / "memory" / "guide.md").write_text(f"# Harbour guide\n\n{sections}\n", encoding="utf-8")
    eng.memory.index("helper")
    guide = "SELECT start_line, lex FROM memory_chunks WHERE path = 'memory/guide.md'"
    with eng.db.engine.connect() as conn:
        indexed = dict(conn.execute(text(guide)).all())
    assert len(indexed) > 2 and any(lex.startswith("harbour guid section") for lex in indexed.values())
    assert _by(run_doctor(eng), "full-text").status == "ok"  # the heading paths are no problem
    later = max(indexed)
    _sql(eng, f"UPDATE memory_chunks SET lex = 'zzz' WHERE path = 'memory/guide.md' AND start_line = {later}")
    assert _by(run_doctor(eng), "full-text").status == "problem"
    report = run_doctor(eng, repair=True)
    assert report.repaired == ["helper: indexed 1 documents again (out-of-date full-text terms)"]
    with eng.db.engine.connect() as conn:
        assert dict(conn.execute(text(guide)).all()) == indexed
    # What the earlier repair left: terms recomputed from the text alone, the heading path lost.
    from goclaw_search.tokenize import terms

    with eng.db.engine.connect() as conn:
        body = conn.execute(
            text(f"SELECT text FROM memory_chunks WHERE path = 'memory/guide.md' AND start_line = {later}")
        ).scalar_one()
    _sql(
        eng,
        f"UPDATE memory_chunks SET lex = :lex WHERE path = 'memory/guide.md' AND start_line = {later}",
        lex=" ".join(terms(body)),
    )
    assert _by(run_doctor(eng), "full-text").status == "problem"
    report = run_doctor(eng, repair=True)
    assert report.repaired == ["helper: indexed 1 documents again (out-of-date full-text terms)"]
    with eng.db.engine.connect() as conn:
        again = dict(conn.execute(text(guide)).all())
    assert again == indexed  # the heading paths' terms are back, as indexing makes them
