"""One bad memory file never stops indexing for the whole agent.

A file name that is not UTF-8, a NUL byte in the content (PostgreSQL's text type refuses it)
and a path longer than the index's 1,024-character column are skipped and reported, on both
backends; every other file is indexed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_cli
from tests.memory_helpers import write


def _bad_files(agent_dir: Path) -> str:
    """Three bad files beside two good ones; returns the long path (agent-relative)."""
    write(agent_dir, "MEMORY.md", "# Facts\n\nThe release train leaves on Thursdays.\n")
    write(agent_dir, "memory/good.md", "Ada prefers tea over coffee.\n")
    mem = os.fsencode(agent_dir / "memory")
    with open(os.path.join(mem, b"caf\xe9-latin1.md"), "wb") as fh:  # not UTF-8
        fh.write(b"Latin-1 named notes about the espresso machine.\n")
    write(agent_dir, "memory/binary.md", "before\x00after the NUL byte\n")
    parts = ["d" * 180] * 6  # six folders of 180 characters: the path passes 1,024
    long_rel = "memory/" + "/".join(parts) + "/long.md"
    write(agent_dir, long_rel, "A note too deep for the index.\n")
    return long_rel


def test_bad_files_are_skipped_and_reported(make_engine: Any, workspace: Path, database_url: Any) -> None:
    eng = make_engine()
    eng.agents.create("ada")
    agent_dir = Path(eng.agent_dir(eng.agents.get("ada")))
    long_rel = _bad_files(agent_dir)
    args = {"workspace": workspace, "database_url": database_url}

    res = run_cli(["memory", "index", "--json"], **args)
    assert res.code == 0, res.err
    data = json.loads(res.out)
    assert data["rechunked"] == 2 and data["files_scanned"] == 5, data
    reasons = {s["path"]: s["reason"] for s in data["skipped_files"]}
    assert set(reasons) == {"memory/caf\\xe9-latin1.md", "memory/binary.md", long_rel}
    assert "UTF-8" in reasons["memory/caf\\xe9-latin1.md"]
    assert "NUL" in reasons["memory/binary.md"]
    assert "1,024" in reasons[long_rel]

    res = run_cli(["memory", "search", "tea", "--agent", "ada", "--channel", "lexical", "--json"], **args)
    assert res.code == 0 and [h["path"] for h in json.loads(res.out)] == ["memory/good.md"]

    res = run_cli(["memory", "index"], **args)  # the plain summary names them on stderr
    assert res.code == 0, res.err
    assert "skipped 3 files" in res.err
    assert "memory/binary.md: contains NUL bytes" in res.err
    assert "Traceback" not in res.err and "internal error" not in res.err


def test_a_bad_file_does_not_take_its_batch_down(engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever a database refuses for one file (beyond the checks made up front), the other
    files of its transaction batch are still written."""
    engine.agents.create("ada")
    agent_dir = Path(engine.agent_dir(engine.agents.get("ada")))
    for i in range(5):
        write(agent_dir, f"memory/n{i}.md", f"note number {i}\n")
    from goclaw_memory import indexer as mod

    real = mod.MemoryIndexer._write_batch

    def picky(self: Any, agent_id: str, batch: Any, *a: Any, **kw: Any) -> None:
        if any(p.file.path == "memory/n3.md" for p in batch):
            raise ValueError("refused by the database")
        real(self, agent_id, batch, *a, **kw)

    monkeypatch.setattr(mod.MemoryIndexer, "_write_batch", picky)
    report = engine.memory.index("ada")
    assert report.rechunked == 4
    assert report.skipped_files == [{"path": "memory/n3.md", "reason": "ValueError: refused by the database"}]


@pytest.mark.postgres
def test_postgresql_refusal_skips_only_that_file(
    pg_schema_url: str, workspace: Path, monkeypatch: Any
) -> None:
    """Without the up-front check, PostgreSQL itself refuses the long path (a DataError); the
    per-file fallback skips that file and writes the others of its batch."""
    from goclaw.engine import Engine
    from goclaw_memory import index_scan

    monkeypatch.setattr(index_scan, "unindexable_name", lambda path: None)
    eng = Engine.open(workspace, database_url=pg_schema_url)
    try:
        eng.agents.create("ada")
        agent_dir = Path(eng.agent_dir(eng.agents.get("ada")))
        write(agent_dir, "memory/good.md", "Ada prefers tea over coffee.\n")
        long_rel = "memory/" + "/".join(["d" * 180] * 6) + "/long.md"
        write(agent_dir, long_rel, "A note too deep for the index.\n")
        report = eng.memory.index("ada")
    finally:
        eng.close()
    assert report.rechunked == 1
    assert [s["path"] for s in report.skipped_files] == [long_rel]
    assert report.skipped_files[0]["reason"].startswith("StoreError: database error:")
