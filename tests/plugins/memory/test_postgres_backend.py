"""The ``postgresql`` search backend (tsvector + HNSW in the database), selected explicitly:
``auto`` picks ``inprocess`` on PostgreSQL. The shipped backend suite
(goclaw_memory.testing.backend_suite) runs here with it, then its own behaviour: common terms, the deferred
HNSW build and binary vectors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text

from goclaw_memory.testing.backend_suite import *  # noqa: F403 - the suite's tests and fixtures
from tests.memory_helpers import write

pytestmark = pytest.mark.postgres


@pytest.fixture(params=["postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    """The suite's engines on PostgreSQL only (this backend needs it)."""
    return str(request.param)


@pytest.fixture
def search_backend() -> str:
    return "postgresql"


@pytest.fixture
def pg_engine(pg_schema_url: str, workspace: Path) -> Any:
    from goclaw.engine import Engine

    eng = Engine.open(workspace, pg_schema_url, plugins={"embeddings": {"provider": "none"}})
    eng.agents.create("ada")
    yield eng
    eng.close()


def _chunk_ids(eng: Any) -> dict[str, int]:
    with eng.db.engine.connect() as conn:
        rows = conn.execute(text("SELECT path, id FROM memory_chunks")).all()
    return {r[0]: int(r[1]) for r in rows}


def _analyze(eng: Any) -> None:
    with eng.db.engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE memory_chunks")
        conn.commit()


@pytest.fixture
def common_corpus(pg_engine: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """40 chunks that all say 'deploy' (common once the budget is 10), one with 'zebra'."""
    import goclaw_memory.pg_backend as backends

    monkeypatch.setattr(backends, "PG_RANK_BUDGET", 10)
    root = Path(pg_engine.agent_dir(pg_engine.agents.get("ada")))
    for i in range(40):
        extra = " deploy deploy" if i == 7 else ""
        write(root, f"memory/d{i:02d}.md", f"We deploy service number {i} on Mondays.{extra}\n")
    write(root, "memory/zebra.md", "We deploy the zebra gateway by hand.\n")
    pg_engine.memory.index("ada")
    _analyze(pg_engine)
    return pg_engine


def test_common_terms_are_scored_by_bm25(common_corpus: Any) -> None:
    eng = common_corpus
    backend = eng.memory.backend
    with eng.db.engine.connect() as conn:
        stats = backend._doc_freq(conn)
    assert stats.df.get("deploy", 0) > 10, "ANALYZE should list 'deploy' as a common lexeme"
    # Only a common term: its matches are ranked by BM25 (three times 'deploy' beats once).
    hits = eng.memory.search("deploy", "ada", channel="lexical", limit=10)
    assert len(hits) == 10 and hits[0].path == "memory/d07.md"
    # A selective term outweighs the common one; the common term's matches fill up the rest.
    hits = eng.memory.search("deploy zebra", "ada", channel="lexical", limit=10)
    assert hits[0].path == "memory/zebra.md" and hits[1].path == "memory/d07.md" and len(hits) == 10


def test_hybrid_search_with_common_words_still_finds_the_rare_one(common_corpus: Any) -> None:
    hits = common_corpus.memory.search("deploy zebra", "ada", channel="lexical")
    assert hits[0].path == "memory/zebra.md"


def test_split_terms_budget() -> None:
    from goclaw_memory.pg_backend import split_terms

    df = {"common": 900, "usual": 400, "rare": 3}
    assert split_terms(["common", "rare", "usual"], df, 500) == (["rare", "usual"], ["common"])
    assert split_terms(["common", "usual"], df, 100) == ([], ["common", "usual"])
    assert split_terms(["common", "usual"], df, 100, keep_rarest=True) == (["usual"], ["common"])
    assert split_terms(["x", "y"], {}, 0) == (["x", "y"], [])  # unknown frequency: rare


def test_hnsw_index_is_built_after_the_load(pg_schema_url: str, workspace: Path) -> None:
    from goclaw.engine import Engine

    eng = Engine.open(workspace, pg_schema_url)  # the default (static) embedder
    try:
        eng.agents.create("ada")
        root = Path(eng.agent_dir(eng.agents.get("ada")))
        for i in range(5):
            write(root, f"memory/n{i}.md", f"Note {i}: the kettle is in the cupboard.\n")
        dim = int(eng.embedder().dim)
        name = f"ix_memory_chunks_hnsw_{dim}"
        with eng.db.engine.connect() as conn:
            assert conn.execute(text("SELECT to_regclass(:n)"), {"n": name}).scalar() is None
        eng.memory.index("ada")
        with eng.db.engine.connect() as conn:
            assert conn.execute(text("SELECT to_regclass(:n)"), {"n": name}).scalar() is not None
            plan = "\n".join(
                r[0]
                for r in conn.execute(
                    text(
                        f"EXPLAIN SELECT id FROM memory_chunks WHERE embedding_dim = {dim} "
                        f"ORDER BY (embedding::vector({dim})) <=> CAST(:q AS vector({dim})) LIMIT 3"
                    ),
                    {"q": "[" + ",".join(["0.1"] * dim) + "]"},
                )
            )
        assert "Seq Scan" in plan or name in plan  # a tiny table may be scanned; both are exact
        hits = eng.memory.search("where is the kettle", "ada", channel="vector")
        assert hits and "kettle" in hits[0].snippet
    finally:
        eng.close()


def test_vectors_travel_in_binary_and_arrive_exact(pg_schema_url: str, workspace: Path) -> None:
    from goclaw.engine import Engine

    eng = Engine.open(workspace, pg_schema_url)  # the default (static) embedder
    try:
        eng.agents.create("ada")
        root = Path(eng.agent_dir(eng.agents.get("ada")))
        body = "The spare key is taped under the blue flower pot."
        write(root, "memory/key.md", body + "\n")
        eng.memory.index("ada")
        with eng.db.engine.connect() as conn:
            assert conn.connection.driver_connection.adapters.types.get("vector") is not None
            stored, digest = conn.execute(text("SELECT embedding::text, chunk_hash FROM memory_chunks")).one()
            cached = conn.execute(
                text("SELECT embedding::text FROM embedding_cache WHERE chunk_hash = :h"), {"h": digest}
            ).scalar_one()
        expected = np.asarray(eng.embedder().embed([body])[0], dtype=np.float32)
        for literal in (stored, cached):
            got = np.asarray([float(x) for x in literal.strip("[]").split(",")], dtype=np.float32)
            assert got.shape == expected.shape
            np.testing.assert_array_equal(got, expected)
    finally:
        eng.close()


def test_stemmed_codes_and_cjk_match_as_on_sqlite(pg_engine: Any) -> None:
    """PostgreSQL's tsv holds the retrieval engine's terms: stemming, whole codes, CJK bigrams."""
    root = Path(pg_engine.agent_dir(pg_engine.agents.get("ada")))
    write(root, "memory/a.md", "The customers were running migrations for TCK-4471 yesterday.\n")
    write(root, "memory/b.md", "Ticket 4471 is unrelated; TCK is our prefix.\n")
    write(root, "memory/c.md", "東京の天気は晴れです。\n")
    pg_engine.memory.index("ada")
    assert (
        pg_engine.memory.search("customer runs migration", "ada", channel="lexical")[0].path == "memory/a.md"
    )
    assert pg_engine.memory.search("TCK-4471", "ada", channel="lexical")[0].path == "memory/a.md"
    assert pg_engine.memory.search("天気", "ada", channel="lexical")[0].path == "memory/c.md"


def test_bulk_load_rebuilds_the_hnsw_index_once(pg_schema_url: str, workspace: Path) -> None:
    from goclaw.engine import Engine

    eng = Engine.open(workspace, pg_schema_url)  # the default (static) embedder
    try:
        name = f"ix_memory_chunks_hnsw_{int(eng.embedder().dim)}"

        def index_oid() -> Any:
            with eng.db.engine.connect() as conn:
                return conn.execute(text("SELECT to_regclass(:n)::oid"), {"n": name}).scalar()

        for agent, topic in (("ada", "kettle in the cupboard"), ("bob", "bicycle in the shed")):
            eng.agents.create(agent)
            root = Path(eng.agent_dir(eng.agents.get(agent)))
            for i in range(4):
                write(root, f"memory/n{i}.md", f"Note {i}: the {topic}.\n")
        eng.memory.index("ada")
        first = index_oid()
        assert first is not None
        builds: list[str] = []
        backend = eng.memory.backend
        original = backend.finish_vectors

        def counting() -> None:
            if backend._deferred and not backend._bulk:
                builds.append("build")
            original()

        backend.finish_vectors = counting
        report = eng.memory.index(bulk=True)  # every agent: one drop, one build
        assert report.chunks_written == 4  # ada's chunks were unchanged
        second = index_oid()
        assert second is not None and second != first
        assert builds == ["build"]
        hits = eng.memory.search("where is the bicycle", "bob", channel="vector")
        assert hits and "bicycle" in hits[0].snippet
    finally:
        eng.close()
