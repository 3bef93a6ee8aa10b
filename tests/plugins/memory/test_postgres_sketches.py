"""The ``postgresql`` backend's passage sketches (goclaw_memory.pg_sketches): their encoding,
stored by an index run, read with a search's rows (never one of an older text or another
model), gone with their chunks (``goclaw forget`` leaves none), filled by ``doctor --repair``;
and the query terms' positions its rows carry for the overlap reranker."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text

from goclaw.contracts.search import FusionSettings, SearchQuery
from goclaw.engine import Engine
from goclaw_memory.pg_sketches import SketchCache, decode, encode, space_key
from goclaw_search.passage_sketches import PassageSketch
from goclaw_search.rerank import TermMatches, overlap_scores
from goclaw_search.tokenize import query_terms
from tests.memory_helpers import write
from tests.plugins.memory.test_passage_sketches import MORE, QUERIES, _scored, _spy
from tests.plugins.memory.test_postprocess import PASSAGE_NOTES, PASSAGE_Q


def _sketch(rng: random.Random, n_seg: int, wide_tokens: bool = False) -> PassageSketch:
    seg_len = [rng.randint(1, 6) for _ in range(n_seg)]
    passages = [
        sorted(rng.sample(range(n_seg), rng.randint(1, min(3, n_seg)))) for _ in range(rng.randint(1, 5))
    ]
    top = 70_000 if wide_tokens else 30_000
    return PassageSketch(
        np.asarray(
            [rng.randrange(top) for _ in range(sum(seg_len))], dtype=np.uint32 if wide_tokens else np.uint16
        ),
        np.asarray(seg_len, dtype=np.uint16),
        np.asarray([r for p in passages for r in p], dtype=np.uint16 if n_seg > 256 else np.uint8),
        np.asarray([len(p) for p in passages], dtype=np.uint8),
        np.asarray([rng.uniform(0.2, 3.0) for _ in passages], dtype=np.float32),
    )


def test_a_sketch_survives_its_encoding() -> None:
    rng = random.Random(5)
    empty = PassageSketch(*(np.zeros(0, t) for t in (np.uint16, np.uint16, np.uint8, np.uint8, np.float32)))
    cases = [empty, _sketch(rng, 300), _sketch(rng, 4, wide_tokens=True)]
    cases += [_sketch(rng, rng.randint(1, 9)) for _ in range(50)]
    for sketch in cases:
        blob = encode(sketch)
        assert blob is not None
        back = decode(blob)
        for want, got in zip(sketch, back, strict=True):
            assert np.array_equal(np.asarray(want), got)
    assert encode(None) is None
    too_many = empty._replace(seg_len=np.ones(70_000, np.uint16), tokens=np.zeros(70_000, np.uint16))
    assert encode(too_many) is None  # its chunk is scored from its text


def test_the_cache_keeps_the_latest_and_answers_for_its_agent_and_space_only() -> None:
    rng = random.Random(2)
    blob = encode(_sketch(rng, 3))
    cache = SketchCache(size=3)
    cache.put("ada", "s", [(1, blob), (2, None), (3, blob)])
    cache.put("ada", "s", [(4, blob)])
    assert len(cache) == 3
    assert cache.batch("ada", [1, 2, 3, 4, -1], "s").has.tolist() == [False, False, True, True, False]
    assert not cache.batch("bob", [3, 4], "s").has.any()
    assert not cache.batch("ada", [3, 4], "other").has.any()
    cache.drop("ada")
    assert len(cache) == 0


@pytest.fixture
def eng(pg_schema_url: str, workspace: Path) -> Any:
    e = Engine.open(
        workspace, pg_schema_url, plugins={"memory": {"backend": "postgresql", "rerank": "overlap"}}
    )
    root = Path(e.agent_dir(e.agents.create("ada")))
    for rel, body in {**PASSAGE_NOTES, **MORE}.items():
        write(root, rel, body)
    write(root, "users/u1/memory/own.md", "u1 keeps the Kite Ceramics credential in a vault.\n")
    e.memory.index("ada")
    yield e
    e.close()


def _sketch_rows(eng: Any) -> dict[int, str]:
    with eng.db.engine.connect() as c:
        return dict(c.execute(text("SELECT chunk_id, chunk_hash FROM memory_sketches")).all())


def _orphans(eng: Any) -> int:
    with eng.db.engine.connect() as c:
        return int(
            c.execute(
                text(
                    "SELECT count(*) FROM memory_sketches s LEFT JOIN memory_chunks c ON c.id = s.chunk_id "
                    "AND c.chunk_hash = s.chunk_hash WHERE c.id IS NULL"
                )
            ).scalar_one()
        )


@pytest.mark.postgres
def test_an_index_run_stores_a_sketch_per_embedded_chunk(eng: Any) -> None:
    with eng.db.engine.connect() as c:
        chunks = dict(
            c.execute(text("SELECT id, chunk_hash FROM memory_chunks WHERE embedding IS NOT NULL")).all()
        )
        spaces = set(c.execute(text("SELECT DISTINCT space FROM memory_sketches")).scalars())
    assert chunks and _sketch_rows(eng) == chunks
    e = eng.embedder()
    assert spaces == {space_key((e.provider, e.model, int(e.dim)))}


@pytest.mark.postgres
def test_a_stale_or_other_models_sketch_is_never_used(eng: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _spy(monkeypatch)
    want = {q: _scored(eng, q) for q in QUERIES}
    assert asked == []
    for change in ("chunk_hash = 'older'", "space = 'other|model|8'"):
        with eng.db.engine.begin() as c:
            c.execute(text(f"UPDATE memory_sketches SET {change}"))
        for q in QUERIES:
            got = _scored(eng, q)
            assert [r[:2] for r in got] == [r[:2] for r in want[q]]
            np.testing.assert_allclose([r[2] for r in got], [r[2] for r in want[q]], rtol=1e-6)
        assert asked  # scored from the text
        with eng.db.engine.begin() as c:
            c.execute(text("DELETE FROM memory_sketches"))
        asked.clear()
    # doctor --repair sketches the chunks indexed without one; the text is read no more.
    report = eng.memory.doctor(repair=True)
    assert any("passage sketches" in line for line in report.repaired)
    assert _scored(eng, PASSAGE_Q) == want[PASSAGE_Q] and asked == []
    assert eng.memory.doctor(repair=True).repaired == []


@pytest.mark.postgres
def test_sketches_go_with_their_chunks(eng: Any) -> None:
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    before = _sketch_rows(eng)
    write(root, "memory/c.md", "# Deploys\n- kestrel rolled back on Friday.\n")
    (root / "memory/d.md").unlink()
    eng.memory.index("ada")
    after = _sketch_rows(eng)
    assert after != before and _orphans(eng) == 0
    # A chunk's text changed in place (no index run): its sketch goes in the same transaction.
    cid = next(iter(after))
    with eng.db.engine.begin() as c:
        c.execute(text("UPDATE memory_chunks SET text = 'redacted' WHERE id = :i"), {"i": cid})
    assert cid not in _sketch_rows(eng)


@pytest.mark.postgres
@pytest.mark.parametrize("trigger", [True, False])
def test_forget_leaves_no_sketch_of_the_erased_text(eng: Any, trigger: bool) -> None:
    from goclaw.forget import forget_agent, forget_user

    if not trigger:  # a database whose trigger was dropped (e.g. by the partition recipe)
        with eng.db.engine.begin() as c:
            c.execute(text("DROP TRIGGER memory_chunks_stats_delete ON memory_chunks"))
    with eng.db.engine.connect() as c:
        own = set(c.execute(text("SELECT id FROM memory_chunks WHERE user_id = 'u1'")).scalars())
    assert own and own <= set(_sketch_rows(eng))
    eng.memory.search(PASSAGE_Q, "ada", user="u1")
    forget_user(eng, "u1", dry_run=False)
    assert not own & set(_sketch_rows(eng)) and _orphans(eng) == 0
    assert not eng.memory.backend.chunk_sketches(eng.agents.get("ada").id, sorted(own), _space(eng)).has.any()
    forget_agent(eng, "ada", dry_run=False)
    assert _sketch_rows(eng) == {} and len(eng.memory.backend.sketches) == 0


def _space(eng: Any) -> tuple[str, str, int]:
    e = eng.embedder()
    return (e.provider, e.model, int(e.dim))


@pytest.mark.postgres
def test_rows_carry_the_query_terms_positions_or_no_terms(eng: Any) -> None:
    """With ``rerank_terms`` the rows' terms are the query terms' positions (one batch, the
    reranker's features precomputed) and rerank as the whole term lists do; without, none."""
    backend = eng.memory.backend
    agent = eng.agents.get("ada").id
    qtext = "Who approved the refund for Kite Ceramics?"
    vec = eng.embedder().embed([qtext])[0]

    def ask(rerank_terms: bool) -> Any:
        q = SearchQuery(
            agent, ("", "u1"), qtext, tuple(query_terms(qtext)), vec, _space(eng), 10,
            fusion=FusionSettings(), rerank_terms=rerank_terms,
        )  # fmt: skip
        return q, backend.search(q)

    q, result = ask(True)
    rows = [result.rows[c.id] for c in result.chunks]
    assert rows and all(type(r.terms) is TermMatches for r in rows)
    with eng.db.engine.connect() as c:
        lex = dict(c.execute(text("SELECT id, lex FROM memory_chunks")).all())
    plain = [lex[r.id].split() for r in rows]
    for r, terms in zip(rows, plain, strict=True):
        want = {t: [i for i, x in enumerate(terms) if x == t] for t in dict.fromkeys(q.terms) if t in terms}
        assert {k: list(v) for k, v in r.terms.items()} == want
    scores = [c.score for c in result.chunks]
    groups = [r.path for r in rows]
    assert overlap_scores(q.terms, [r.terms for r in rows], scores, 0.3, groups) == overlap_scores(
        q.terms, plain, scores, 0.3, groups
    )
    _q, without = ask(False)
    assert [c.id for c in without.chunks] == [c.id for c in result.chunks]
    assert all(r.terms is None for r in without.rows.values())


@pytest.mark.postgres
def test_the_migration_adds_the_table_and_the_triggers_delete(pg_schema_url: str, workspace: Path) -> None:
    """A database at memory_0007 with the backend's triggers installed: memory_0008 creates the
    table and replaces the trigger function (its deletes then take the sketches along); the
    chunks indexed before have none until ``doctor --repair``. Down at memory_0007, deletes work."""
    from alembic import command

    from tests.plugins.memory.test_pg_packed_migration import _memory_chain

    plugins = {"memory": {"backend": "postgresql", "rerank": "overlap"}}
    eng = Engine.open(workspace, pg_schema_url, plugins=plugins)
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    try:
        for rel, body in PASSAGE_NOTES.items():
            write(root, rel, body)
        eng.memory.index("ada")  # the backend's first use: its triggers
        with eng.db.engine.begin() as conn:
            command.downgrade(_memory_chain(conn), "memory_0007")
            assert conn.execute(text("SELECT to_regclass('memory_sketches')")).scalar() is None
            conn.execute(text("DELETE FROM memory_chunks WHERE path = 'memory/a.md'"))  # works
        eng.memory.backend._write_sketches = lambda changes: None  # what the code of 0007 wrote
        write(root, "memory/c.md", "Kite Ceramics rotated the credential on Friday.\n")
        eng.memory.index("ada")
    finally:
        eng.close()
    eng = Engine.open(workspace, pg_schema_url, plugins=plugins)  # migrates to the head
    try:
        with eng.db.engine.connect() as conn:
            body = conn.execute(
                text(
                    "SELECT prosrc FROM pg_proc WHERE proname = 'memory_chunks_stats' "
                    "AND pronamespace = current_schema()::regnamespace"
                )
            ).scalar()
        assert "memory_sketches" in str(body) and _sketch_rows(eng) == {}
        assert any("passage sketches" in line for line in eng.memory.doctor(repair=True).repaired)
        with eng.db.engine.connect() as conn:
            b = set(conn.execute(text("SELECT id FROM memory_chunks WHERE path = 'memory/b.md'")).scalars())
        assert b and b <= set(_sketch_rows(eng))
        (root / "memory/b.md").unlink()
        eng.memory.index("ada")
        assert not b & set(_sketch_rows(eng)) and _orphans(eng) == 0
    finally:
        eng.close()
