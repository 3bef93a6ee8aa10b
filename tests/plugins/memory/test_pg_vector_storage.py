"""Chunk vectors stay in the row on PostgreSQL (storage ``MAIN``, set by a migration): when a
chunk's row passes the TOAST threshold its text moves out first, so an exact vector scan or a
candidate's cosine reads no TOAST pages (benchmarks/results, "pg-vector-storage")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.memory_helpers import write

pytestmark = pytest.mark.usefixtures("pg_schema_url")


@pytest.mark.parametrize("backend", ["postgresql", "inprocess"])
def test_chunk_vectors_are_stored_in_the_row(pg_schema_url: str, workspace: Path, backend: str) -> None:
    from goclaw.engine import Engine

    eng = Engine.open(workspace, pg_schema_url, plugins={"memory": {"backend": backend}})
    try:
        with eng.db.engine.connect() as conn:
            storage = conn.exec_driver_sql(
                "SELECT attstorage FROM pg_attribute WHERE attrelid = 'memory_chunks'::regclass "
                "AND attname = 'embedding'"
            ).scalar()
        assert storage == "m"
        eng.agents.create("ada")
        root = Path(eng.agent_dir(eng.agents.get("ada")))
        filler = " ".join(f"w{i * 7919 % 100003:x}q" for i in range(150))  # a row past 2 KB
        write(root, "memory/long.md", f"# Notes\n\n{filler}\n\nThe kettle is in the garden shed.\n")
        write(root, "memory/other.md", "# Trips\n\nThe ferry leaves at noon from the north pier.\n")
        eng.memory.index("ada")
        hits = eng.memory.search("kettle in the shed", "ada", channel="vector")
        assert hits and hits[0].path == "memory/long.md"
    finally:
        eng.close()
