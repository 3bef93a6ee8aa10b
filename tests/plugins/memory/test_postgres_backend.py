"""The ``postgresql`` search backend (the exact ranking computed by the database; ``auto``
selects it on PostgreSQL). The shipped backend suite
(goclaw_memory.testing.backend_suite) runs here with it, then its own behaviour: common terms,
the statistics the triggers keep, the pruning bound, the deferred HNSW build and binary vectors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text

from goclaw_memory.testing.backend_suite import *  # noqa: F403 - the suite's tests and fixtures
from tests.memory_helpers import index_kettle_and_ferry, open_with_backend, pg_postings, write

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
    eng = open_with_backend(pg_schema_url, workspace, "postgresql")
    eng.agents.create("ada")
    yield eng
    eng.close()


def _exact(workspace: Path, url: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The in-memory engine over the same database, full text only, reranker off: the exact
    ranking the backend's is compared with."""
    from goclaw.engine import Engine

    monkeypatch.delenv("GOCLAW_PLUGINS__MEMORY__BACKEND", raising=False)
    return Engine.open(
        workspace,
        url,
        plugins={"embeddings": {"provider": "none"}, "memory": {"backend": "inprocess", "rerank": "none"}},
    )


def _chunk_ids(eng: Any) -> dict[str, int]:
    with eng.db.engine.connect() as conn:
        rows = conn.execute(text("SELECT path, id FROM memory_chunks")).all()
    return {r[0]: int(r[1]) for r in rows}


@pytest.fixture
def common_corpus(pg_engine: Any) -> Any:
    """40 chunks that all say 'deploy', one with 'zebra': more than a first read of the
    chunks of highest bound (2 × 10 with these settings)."""
    cfg = pg_engine.plugin_settings("memory")
    cfg.min_candidates, cfg.candidate_factor = 1, 1
    root = Path(pg_engine.agent_dir(pg_engine.agents.get("ada")))
    for i in range(40):
        extra = " deploy deploy" if i == 7 else ""
        write(root, f"memory/d{i:02d}.md", f"We deploy service number {i} on Mondays.{extra}\n")
    write(root, "memory/zebra.md", "We deploy the zebra gateway by hand.\n")
    pg_engine.memory.index("ada")
    return pg_engine


def test_common_terms_are_scored_by_bm25(common_corpus: Any) -> None:
    eng = common_corpus
    # Only a common term: its matches are ranked by BM25 (three times 'deploy' beats once).
    hits = eng.memory.search("deploy", "ada", channel="lexical", limit=10)
    assert len(hits) == 10 and hits[0].path == "memory/d07.md"
    # A selective term outweighs the common one; the common term's matches fill up the rest.
    hits = eng.memory.search("deploy zebra", "ada", channel="lexical", limit=10)
    assert hits[0].path == "memory/zebra.md" and hits[1].path == "memory/d07.md" and len(hits) == 10


def test_hybrid_search_with_common_words_still_finds_the_rare_one(common_corpus: Any) -> None:
    hits = common_corpus.memory.search("deploy zebra", "ada", channel="lexical")
    assert hits[0].path == "memory/zebra.md"


def _recount(eng: Any) -> tuple[set[tuple[str, int, int]], set[tuple[str, str, int]]]:
    """The statistics the triggers keep, and the same counted from the chunks now."""
    with eng.db.engine.connect() as conn:
        kept = {
            tuple(r)
            for r in conn.execute(
                text("SELECT agent_id, sum(chunks), sum(terms) FROM memory_agent_stats GROUP BY agent_id")
            )
        }
        terms = {
            tuple(r)
            for r in conn.execute(
                text(
                    "SELECT agent_id, term, sum(df) FROM memory_term_stats GROUP BY agent_id, term "
                    "HAVING sum(df) > 0"
                )
            )
        }
        counted = {
            tuple(r)
            for r in conn.execute(
                text(
                    "SELECT agent_id, count(*), coalesce(sum(cardinality(array_remove("
                    "string_to_array(coalesce(lex, ''), ' '), ''))), 0) FROM memory_chunks GROUP BY agent_id"
                )
            )
        }
        counted_terms = {
            tuple(r)
            for r in conn.execute(
                text(
                    "SELECT agent_id, term, count(DISTINCT id) FROM memory_chunks, "
                    "unnest(string_to_array(lex, ' ')) AS t(term) WHERE term <> '' GROUP BY agent_id, term"
                )
            )
        }
    assert kept == counted
    return terms, counted_terms


def test_term_statistics_follow_every_write(pg_engine: Any) -> None:
    eng = pg_engine
    root = index_kettle_and_ferry(eng)
    kept, counted = _recount(eng)
    assert kept == counted and any(t[1].startswith("kettl") and t[2] == 1 for t in kept)
    write(root, "memory/a.md", "The ferry is late.\n")  # changed: old terms out, new in
    (root / "memory" / "b.md").unlink()
    eng.memory.index("ada")
    kept, counted = _recount(eng)
    assert kept == counted and not any(t[1].startswith("kettl") for t in kept)
    eng.memory.writer.add("ada", "Remember: the ferry is late on Sundays.")
    kept, counted = _recount(eng)
    assert kept == counted
    assert pg_postings(eng) == _counted_postings(eng)


def _term_rows(eng: Any) -> list[tuple[str, str]]:
    with eng.db.engine.connect() as c:
        return [(r[0], r[1]) for r in c.execute(text("SELECT agent_id, term FROM memory_term_stats")).all()]


def test_statistics_rows_stay_folded_and_forget_leaves_no_term(pg_engine: Any) -> None:
    """Each index run folds the statistics rows it appended (one per term, not one per write),
    and ``goclaw forget`` leaves no term of the erased text behind, in the statistics or the
    postings."""
    from goclaw.forget import forget_user

    eng = pg_engine
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    for i in range(3):  # three runs, each rewriting a file: delta rows without a fold pile up
        write(root, "memory/ferry.md", f"The harbour ferry leaves at noon, revision {i}.\n")
        eng.memory.index("ada")
    write(root, "users/bo/memory/secret.md", "Bo keeps the zanzibarite ledger.\n")
    eng.memory.index("ada")
    rows = _term_rows(eng)
    assert len(rows) == len(set(rows)), "one row per agent and term"
    assert any(term.startswith("zanzibar") for _a, term in rows)
    forget_user(eng, "bo", dry_run=False)
    assert not any(term.startswith("zanzibar") for _a, term in _term_rows(eng))
    with eng.db.engine.connect() as c:
        for table, column in (("memory_packed", "term"), ("memory_delta", "term"), ("memory_tombs", "lex")):
            found = c.execute(text(f"SELECT 1 FROM {table} WHERE {column} LIKE '%zanzibar%'")).first()
            assert not found, table
    assert pg_postings(eng) == _counted_postings(eng)


def test_an_existing_database_gets_the_triggers_at_the_backends_first_use(
    pg_schema_url: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks written under another backend are counted, and get their postings, when the
    ``postgresql`` backend is first used on the database."""
    monkeypatch.delenv("GOCLAW_PLUGINS__MEMORY__BACKEND", raising=False)
    eng = open_with_backend(pg_schema_url, workspace, "inprocess")
    try:
        index_kettle_and_ferry(eng)
        assert eng.memory.backend.name == "inprocess"
    finally:
        eng.close()
    eng = open_with_backend(pg_schema_url, workspace, "postgresql")
    try:
        hits = eng.memory.search("kettle", "ada", channel="lexical")
        assert [h.path for h in hits] == ["memory/a.md"]
        kept, counted = _recount(eng)
        assert kept == counted
        assert pg_postings(eng) == _counted_postings(eng)
    finally:
        eng.close()


def _counted_postings(eng: Any) -> set[tuple[str, int]]:
    with eng.db.engine.connect() as c:
        return {
            (r[0], int(r[1]))
            for r in c.execute(
                text(
                    "SELECT DISTINCT t.term, c.id FROM memory_chunks c, "
                    "unnest(string_to_array(c.lex, ' ')) AS t(term) WHERE t.term <> ''"
                )
            )
        }


def test_doctor_reports_and_repairs_statistics_a_dropped_trigger_left_behind(pg_engine: Any) -> None:
    from goclaw_memory.doctor import run_doctor

    eng = pg_engine
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    write(root, "memory/a.md", "The kettle whistles.\n")
    eng.memory.index("ada")
    assert [c.status for c in run_doctor(eng).checks if c.name == "pg-stats"] == ["ok"]
    with eng.db.engine.begin() as conn:
        conn.exec_driver_sql("DROP TRIGGER memory_chunks_stats_insert ON memory_chunks")
    write(root, "memory/b.md", "The ferry leaves at noon.\n")
    eng.memory.index("ada")  # written without the trigger: the statistics miss it
    (check,) = [c for c in run_doctor(eng).checks if c.name == "pg-stats"]
    assert check.status == "problem" and "memory_chunks_stats_insert" in check.message
    report = run_doctor(eng, repair=True)
    assert any("BM25 statistics" in line for line in report.repaired)
    assert [c.status for c in report.checks if c.name == "pg-stats"] == ["ok"]
    kept, counted = _recount(eng)
    assert kept == counted


def test_doctor_reports_and_repair_compacts_a_postings_backlog(
    pg_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Postings left in the delta (a compaction skipped while writers were in flight) show in
    the doctor's report, and ``--repair`` compacts them."""
    import goclaw_memory.pg_postings as pg_postings_module
    from goclaw_memory.doctor import run_doctor

    eng = pg_engine
    monkeypatch.setattr(pg_postings_module, "COMPACT_ROWS", 10**9)  # writes do not compact
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    write(root, "MEMORY.md", "# Notes\n")
    eng.memory.index("ada")  # the backend's first use packs what is there
    for i in range(6):
        write(root, f"memory/n{i}.md", f"Note {i}: the kettle whistles at the ferry {i}.\n")
    eng.memory.index("ada")
    assert _packed_state(eng)[1] > 0
    monkeypatch.setattr(pg_postings_module, "COMPACT_ROWS", 1)  # a backlog of more than 10
    (check,) = [c for c in run_doctor(eng).checks if c.name == "pg-stats"]
    assert check.status == "warning" and check.details["delta_postings"] == _packed_state(eng)[1]
    report = run_doctor(eng, repair=True)
    assert any("compacted" in line for line in report.repaired)
    assert _packed_state(eng)[1:] == (0, 0)
    assert [c.status for c in report.checks if c.name == "pg-stats"] == ["ok"]
    assert pg_postings(eng) == _counted_postings(eng)


def test_settled_needs_the_unread_bound_below_the_kth_score() -> None:
    from goclaw_memory.pg_exact import settled

    bm25 = np.array([4.0, 2.0, 1.0])
    cos = np.array([0.5, 0.1, 0.9])
    args: dict[str, Any] = dict(method="weighted", text_weight=0.7, vector_weight=0.3, boost=None, pool=10)
    # fused: 0.85, 0.38, 0.445; 2nd best 0.445 > unread bound 0.7 * 0.4 / 4 + 0.3 * 0.2 = 0.13
    assert settled(bm25, cos, rest_bm25=0.4, rest_cosine=0.2, k=2, **args)
    # unread chunks could score 0.7 * 2 / 4 + 0.3 * 0.2 = 0.41 < 0.445 but not below the 3rd
    assert not settled(bm25, cos, rest_bm25=2.0, rest_cosine=0.2, k=3, **args)
    assert not settled(bm25, cos, rest_bm25=5.0, rest_cosine=0.0, k=1, **args)  # best unknown
    assert settled(bm25, None, rest_bm25=0.5, rest_cosine=0.0, k=3, **args | {"method": "rrf", "pool": 3})
    assert not settled(bm25, None, rest_bm25=1.5, rest_cosine=0.0, k=3, **args | {"method": "rrf", "pool": 3})


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


def _agent_id(eng: Any) -> str:
    return str(eng.agents.get("ada").id)


def _packed_state(eng: Any) -> tuple[int, int, int]:
    with eng.db.engine.connect() as c:
        return tuple(  # type: ignore[return-value]
            int(c.execute(text(f"SELECT count(*) FROM {t}")).scalar_one())
            for t in ("memory_packed", "memory_delta", "memory_tombs")
        )


def test_packed_delta_and_tombstones_rank_as_the_in_memory_engine(
    pg_engine: Any, pg_schema_url: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Common terms in chunks of varied length and frequency, some packed, some rewritten or
    deleted since (tombstones), some new (delta), then compacted: the full-text ranking and its
    scores are the in-memory engine's at every step, and the postings are the chunks' terms."""
    import random

    import goclaw_memory.pg_postings as pg_postings_module
    from goclaw_memory.pg_postings import compact

    cfg = pg_engine.plugin_settings("memory")
    cfg.min_candidates, cfg.candidate_factor = 1, 1
    cfg.rerank = "none"  # the rankings themselves
    rng = random.Random(5)
    words = ["deploy", "server", "ticket", "kettle", "ferry", "noon", "invoice", "gateway"]
    root = Path(pg_engine.agent_dir(pg_engine.agents.get("ada")))

    def note(i: int) -> None:
        body = " ".join(rng.choice(words[: rng.randint(2, 8)]) for _ in range(rng.randint(3, 40)))
        write(root, f"memory/n{i:02d}.md", f"Note {i}: {body}.\n")

    for i in range(80):
        note(i)
    pg_engine.memory.index("ada")
    with pg_engine.db.engine.begin() as c:
        compact(c, _agent_id(pg_engine))
    assert _packed_state(pg_engine)[1:] == (0, 0)
    monkeypatch.setattr(pg_postings_module, "COMPACT_ROWS", 10**9)  # keep the delta below
    monkeypatch.setattr(pg_postings_module, "COMPACT_TOMBS", 10**9)
    for i in range(0, 20, 2):
        note(i)  # rewritten: a tombstone and a delta chunk each
    for i in range(70, 75):
        (root / "memory" / f"n{i:02d}.md").unlink()
    for i in range(80, 86):
        note(i)
    pg_engine.memory.index("ada")
    packed, delta, tombs = _packed_state(pg_engine)
    assert packed and delta and tombs
    exact = _exact(workspace, pg_schema_url, monkeypatch)

    def same() -> None:
        for q in ("deploy server", "ticket kettle ferry", "noon invoice gateway deploy", "server", "note"):
            want = [
                (h.path, round(h.score, 4)) for h in exact.memory.search(q, "ada", channel="lexical", limit=8)
            ]
            got = [
                (h.path, round(h.score, 4))
                for h in pg_engine.memory.search(q, "ada", channel="lexical", limit=8)
            ]
            assert got == want, q
        assert pg_postings(pg_engine) == _counted_postings(pg_engine)

    try:
        same()
        with pg_engine.db.engine.begin() as c:
            assert compact(c, _agent_id(pg_engine))
        assert _packed_state(pg_engine)[1:] == (0, 0)
        same()
    finally:
        exact.close()


def test_concurrent_writers_and_compactions_keep_the_postings_exact(
    pg_schema_url: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two engines add and delete memories of one agent at once while every write compacts
    (thresholds of one posting): writers only insert and a compaction takes the agent's lock
    only when no writer holds it, so no posting is lost or counted twice, and the search ranks
    as the in-memory engine over the same rows."""
    import threading

    import goclaw_memory.pg_postings as pg_postings_module
    from goclaw_memory.pg_postings import compact

    monkeypatch.setattr(pg_postings_module, "COMPACT_ROWS", 1)
    monkeypatch.setattr(pg_postings_module, "COMPACT_TOMBS", 1)
    one = open_with_backend(pg_schema_url, workspace, "postgresql")
    one.agents.create("ada")
    two = open_with_backend(pg_schema_url, workspace, "postgresql")
    words = ["kettle", "ferry", "harbour", "invoice", "gateway", "lamp"]
    failed: list[BaseException] = []

    def writes(eng: Any, user: str | None, n: int) -> None:
        try:
            for i in range(n):
                text_ = f"Note {i} of {user or 'ada'}: {words[i % 6]} {words[(i * 5) % 6]} {i * 7919}."
                entry = eng.memory.writer.add("ada", text_, user)
                if i % 4 == 3:
                    eng.memory.writer.delete("ada", user, id=entry.id)
        except BaseException as exc:  # reported below
            failed.append(exc)

    threads = [
        threading.Thread(target=writes, args=(one, None, 16)),
        threading.Thread(target=writes, args=(two, "bo", 16)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failed, failed
    try:
        assert pg_postings(one) == _counted_postings(one)
        kept, counted = _recount(one)
        assert kept == counted
        with one.db.engine.begin() as c:
            compact(c, _agent_id(one), wait=True)
        assert _packed_state(one)[1:] == (0, 0)
        assert pg_postings(one) == _counted_postings(one)
        exact = _exact(workspace, pg_schema_url, monkeypatch)
        one.plugin_settings("memory").rerank = "none"
        try:
            for q in ("kettle ferry", "harbour lamp invoice", "note"):
                for user in (None, "bo"):
                    want = [
                        (h.path, h.start_line) for h in exact.memory.search(q, "ada", user, channel="lexical")
                    ]
                    got = [
                        (h.path, h.start_line) for h in one.memory.search(q, "ada", user, channel="lexical")
                    ]
                    assert got == want, (q, user)
        finally:
            exact.close()
    finally:
        one.close()
        two.close()


def test_an_agent_edited_past_its_size_is_packed_afresh(
    pg_engine: Any, pg_schema_url: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every edit gives a chunk a new ordinal; once the unused ordinals outnumber the packed
    chunks, the next compaction packs the agent afresh from its chunks (ordinals 0..n-1), and
    it still ranks as the in-memory engine."""
    import goclaw_memory.pg_postings as pg_postings_module

    monkeypatch.setattr(pg_postings_module, "RENUMBER_GAP", 0)
    monkeypatch.setattr(pg_postings_module, "COMPACT_ROWS", 1)  # every write compacts
    pg_engine.plugin_settings("memory").rerank = "none"
    root = Path(pg_engine.agent_dir(pg_engine.agents.get("ada")))

    def next_and_live() -> tuple[int, int]:
        with pg_engine.db.engine.connect() as c:
            row = c.execute(
                text(
                    "SELECT next_ord, (SELECT count(*) FROM memory_ords WHERE agent_id = :a) "
                    "FROM memory_packed_agents WHERE agent_id = :a"
                ),
                {"a": _agent_id(pg_engine)},
            ).one()
        return int(row[0]), int(row[1])

    for i in range(6):
        write(root, f"memory/n{i}.md", f"Note {i}: the kettle whistles near ferry {i}.\n")
    pg_engine.memory.index("ada")
    seen = []
    for round_ in range(4):  # each round rewrites four notes: four new ordinals
        for i in range(4):
            write(root, f"memory/n{i}.md", f"Note {i}, edit {round_}: the ferry {round_} kettle {i}.\n")
        pg_engine.memory.index("ada")
        seen.append(next_and_live())
    # Four edits leave four unused ordinals: fewer than the six chunks, kept; eight: more than
    # the six, packed afresh from ordinal 0.
    assert seen == [(10, 6), (6, 6), (10, 6), (6, 6)]
    assert pg_postings(pg_engine) == _counted_postings(pg_engine)
    exact = _exact(workspace, pg_schema_url, monkeypatch)
    try:
        for q in ("kettle ferry", "edit 3", "note whistles"):
            want = [(h.path, round(h.score, 4)) for h in exact.memory.search(q, "ada", channel="lexical")]
            got = [(h.path, round(h.score, 4)) for h in pg_engine.memory.search(q, "ada", channel="lexical")]
            assert got == want, q
    finally:
        exact.close()


def test_vector_statements_run_on_the_threads_second_connection(eng: Any) -> None:
    """A hybrid search sends its vector statements on a second connection of the thread (lane
    1) and reads the postings on the first meanwhile; the ranking is the formula's; lane 0
    plans generically, lane 1 does not (a generic plan of the HNSW statement scans)."""
    from goclaw_memory import pg_direct
    from goclaw_memory.testing.backend_suite import test_hybrid_equals_the_formula_over_every_chunk

    test_hybrid_equals_the_formula_over_every_chunk(eng)
    lanes = {lane: conn for (_thread, lane), conn in pg_direct._DIRECT[eng].by_thread.items()}
    assert set(lanes) == {0, 1}
    show = "SELECT current_setting('plan_cache_mode')"
    assert lanes[0].query(show, ()) == [("force_generic_plan",)]
    assert lanes[1].query(show, ()) == [("auto",)]


def test_hnsw_explores_the_limit_in_a_hybrid_search_and_more_for_the_vector_channel(eng: Any) -> None:
    """A hybrid search reads the cosines of the postings' best exactly, so its HNSW walk
    explores only as many candidates as it returns; the vector channel alone, whose answer the
    walk is, explores 2 x LIMIT + 40; ``hnsw_ef_search`` overrides both (at least the LIMIT)."""
    from goclaw_memory import pg_direct
    from goclaw_memory.testing.backend_suite import ada_dir, fill

    fill(ada_dir(eng))
    eng.memory.index("ada")
    cfg = eng.plugin_settings("memory")
    cfg.rerank = "none"

    def ef(channel: str) -> int:
        eng.memory.search("the team ships on friday", "ada", limit=5, channel=channel)
        lane = {k: c for (_t, k), c in pg_direct._DIRECT[eng].by_thread.items()}
        return int(lane[1].query("SELECT current_setting('hnsw.ef_search')", ())[0][0])

    limit = max(cfg.min_candidates, cfg.candidate_factor * 5)
    assert ef("hybrid") == limit
    assert ef("vector") == 2 * limit + 40
    cfg.hnsw_ef_search = 7
    assert ef("hybrid") == limit
    cfg.hnsw_ef_search = 300
    assert ef("hybrid") == ef("vector") == 300


def _six_notes_renumbered_on_every_write(pg_engine: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Agent ada with six notes, reranker off, every later write compacting and packing the
    agent afresh (new ordinals); its folder."""
    import goclaw_memory.pg_postings as pg_postings_module

    monkeypatch.setattr(pg_postings_module, "RENUMBER_GAP", 0)
    monkeypatch.setattr(pg_postings_module, "COMPACT_ROWS", 1)  # every write compacts
    pg_engine.plugin_settings("memory").rerank = "none"
    root = Path(pg_engine.agent_dir(pg_engine.agents.get("ada")))
    for i in range(6):
        write(root, f"memory/n{i}.md", f"Note {i}: the kettle whistles near ferry {i}.\n")
    pg_engine.memory.index("ada")
    return root


def test_ids_learnt_before_a_renumbering_are_not_used_after_it(
    pg_engine: Any, pg_schema_url: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Searches note the chunk ids of the ordinals they read (and read those chunks by id
    later); a compaction that packs the agent afresh gives ordinals to other chunks, and the
    searches after it rank as the in-memory engine: what was noted belonged to the old
    generation."""
    root = _six_notes_renumbered_on_every_write(pg_engine, monkeypatch)
    queries = ("kettle ferry", "whistles near", "note kettle")

    def ranked(engine: Any) -> list[list[tuple[str, str]]]:
        return [
            [(h.path, h.snippet) for h in engine.memory.search(q, "ada", limit=6, channel="lexical")]
            for q in queries
        ]

    ranked(pg_engine)
    cache = pg_engine.memory.backend.lists
    noted = [k for k in cache._lists if k[2] == "\x00ids"]
    assert noted and (cache._lists[noted[0]].ids >= 0).sum() == 6  # every winner's id noted
    for round_ in range(2):  # eight unused ordinals after the second round: packed afresh
        for i in range(4):
            write(root, f"memory/n{i}.md", f"Note {i}, edit {round_}: the ferry {round_} kettle {i}.\n")
        pg_engine.memory.index("ada")
    exact = _exact(workspace, pg_schema_url, monkeypatch)
    try:
        assert ranked(pg_engine) == ranked(exact)
    finally:
        exact.close()


def test_a_hybrid_search_gets_every_ordinals_chunk_id_with_the_postings_once(
    eng: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first hybrid search of an agent's generation receives every packed ordinal's chunk
    id with the postings (its best are then read by id), the next ones do not, and a new
    generation (a compaction) sends them afresh."""
    import goclaw_memory.pg_backend as pg_backend_module
    import goclaw_memory.pg_postings as pg_postings_module
    from goclaw_memory.testing.backend_suite import ada_dir, fill

    root = ada_dir(eng)
    fill(root)
    eng.memory.index("ada")
    sent: list[bool] = []
    real = pg_backend_module.fetched

    def spy(rows: Any, *args: Any) -> Any:
        lists = real(rows, *args)
        sent.append(lists.ord_ids is not None)
        return lists

    monkeypatch.setattr(pg_backend_module, "fetched", spy)
    assert eng.memory.search("build pipeline tests", "ada")[0].path == "memory/notes-1.md"
    eng.memory.search("tomato plants balcony", "ada")
    eng.memory.search("tomato plants balcony", "ada", channel="lexical")
    assert sent == [True, False, False]
    cache = eng.memory.backend.lists
    (key,) = [k for k in cache._lists if k[2] == "\x00ids"]
    with eng.db.engine.connect() as conn:
        ords = {int(o): int(i) for o, i in conn.execute(text("SELECT ord, chunk_id FROM memory_ords"))}
    assert ords and {o: int(cache._lists[key].ids[o]) for o in ords} == ords
    monkeypatch.setattr(pg_postings_module, "COMPACT_ROWS", 1)  # the next write compacts
    write(root, "memory/extra.md", "The build pipeline also lints every commit.\n")
    eng.memory.index("ada")
    assert eng.memory.search("build pipeline lints", "ada")[0].path == "memory/extra.md"
    assert sent[-1] is True


def test_a_vector_search_after_the_agent_crossed_the_exact_scan_line_still_finds(
    eng: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search sends the one vector statement its agent's last known size calls for (exact
    scan or HNSW); when the agent has since crossed the line, that statement finds nothing and
    the search asks again with both."""
    import goclaw_memory.pg_backend as pg_backend_module
    from goclaw_memory.testing.backend_suite import ada_dir, fill

    monkeypatch.setattr(pg_backend_module, "EXACT_VECTOR_SCAN", 4)
    monkeypatch.setattr(pg_backend_module, "SCAN_RATIO", 0)  # the line at 4 whatever the table's size
    root = ada_dir(eng)
    write(root, "memory/first.md", "The tomato plants on the balcony need water twice a week.\n")
    eng.memory.index("ada")
    sent: list[int] = []
    real = pg_backend_module.PostgresSearchBackend._vector_sql

    def spy(self: Any, *args: Any) -> Any:
        got = real(self, *args)
        sent.append(len(got) - 1)
        return got

    monkeypatch.setattr(pg_backend_module.PostgresSearchBackend, "_vector_sql", spy)
    assert eng.memory.search("tomato balcony", "ada")[0].path == "memory/first.md"
    assert sent == [2]  # the size not known yet: both
    fill(root)  # past 2 x 4 chunks: HNSW's side of the line, still unknown to the backend
    eng.memory.index("ada")
    sent.clear()
    hits = eng.memory.search("watering the plants on the balcony", "ada", channel="vector")
    assert hits and "memory/first.md" in [h.path for h in hits]
    assert sent == [1, 2]  # the exact scan the old size called for, then both
    sent.clear()
    eng.memory.search("tomato balcony", "ada")  # again the old size's statement, then both
    eng.memory.search("tomato balcony", "ada")  # the size the first one's full-text read saw
    assert sent == [1, 2, 1]


def test_a_renumbering_between_the_postings_and_a_read_by_ordinal_is_noticed(
    pg_engine: Any, pg_schema_url: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compaction that packs the agent afresh between a search's postings (read in one
    snapshot) and its reads by ordinal gives those ordinals to other chunks: the search notices
    (the agent's generation moved) and asks again, so every hit's text is its own chunk's and
    the ranking is the in-memory engine's after the edits."""
    import goclaw_memory.pg_backend as pg_backend_module

    root = _six_notes_renumbered_on_every_write(pg_engine, monkeypatch)
    real = pg_backend_module.fetched
    raced: list[int] = []

    def fetched_then_renumbered(*args: Any) -> Any:
        lists = real(*args)
        if not raced:  # once: edits that renumber, after this search's postings
            raced.append(1)
            for round_ in range(2):
                for i in range(4):
                    write(
                        root, f"memory/n{i}.md", f"Note {i}, edit {round_}: the ferry {round_} kettle {i}.\n"
                    )
                pg_engine.memory.index("ada")
        return lists

    monkeypatch.setattr(pg_backend_module, "fetched", fetched_then_renumbered)
    got = [
        (h.path, h.snippet)
        for h in pg_engine.memory.search("kettle ferry", "ada", limit=6, channel="lexical")
    ]
    assert raced
    exact = _exact(workspace, pg_schema_url, monkeypatch)
    try:
        want = [
            (h.path, h.snippet)
            for h in exact.memory.search("kettle ferry", "ada", limit=6, channel="lexical")
        ]
    finally:
        exact.close()
    assert got == want


def test_a_load_leaves_every_table_the_searches_read_analyzed(
    pg_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a run that wrote many chunks the indexer analyzes the chunks and every table the
    backend's searches read: the searches plan their statements once per connection, and
    planned on a never-analyzed table's figures a full-text search scanned the postings."""
    import goclaw_memory.indexer as indexer_module
    from goclaw_memory.pg_stats import SEARCHED_TABLES

    monkeypatch.setattr(indexer_module, "ANALYZE_AFTER", 2)  # the two notes below
    index_kettle_and_ferry(pg_engine)
    with pg_engine.db.engine.connect() as conn:
        counted = dict(
            conn.execute(
                text(
                    "SELECT relname, reltuples FROM pg_class WHERE relnamespace = "
                    "current_schema()::regnamespace AND relname = ANY(:names)"
                ),
                {"names": list(SEARCHED_TABLES)},
            ).all()
        )
    assert set(counted) == set(SEARCHED_TABLES) and len(SEARCHED_TABLES) == 9
    never = [name for name, tuples in counted.items() if tuples < 0]  # -1: never analyzed
    assert never == [], counted
    assert counted["memory_packed"] > 0 and counted["memory_chunks"] == 2


def test_the_exact_scan_line_follows_the_tables_size() -> None:
    """An agent's vectors are scanned exactly up to 2,000 chunks, or up to where a scan and a
    filtered HNSW walk cost the same: a 10,000-chunk agent alone in its table walks HNSW, the
    same agent among a million other agents' chunks scans."""
    from goclaw_memory.pg_exact import exact_line

    assert exact_line(0) == exact_line(-1) == 2_000
    assert exact_line(10_000) == 3_162  # one 10,000-chunk agent: above the line, HNSW
    assert exact_line(1_100_000) == 33_166  # 10,000 of 1.1 million: below it, scanned
    assert exact_line(100_000, least=0, ratio=0) == 0
