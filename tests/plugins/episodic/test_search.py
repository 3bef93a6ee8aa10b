"""Episodic search on the shared retrieval engine: nothing to pay when an agent has
no summary, exact hybrid scores when it has some, the index follows the table, and migration
0004 upgrades a database with summaries in place."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from goclaw.contracts.columns import utcnow
from goclaw.contracts.memory import NewEpisode
from goclaw.engine import Engine
from goclaw.store import migrate
from goclaw.store.database import Database
from goclaw_episodic.search import episode_lex, searcher
from goclaw_search.tokenize import query_terms, terms
from tests.conftest import BACKENDS, module_engine
from tests.legacy_schema import build_legacy
from tests.skills_helpers import EmbedderPlugin, concept_vector

SUMMARIES = [
    ("", "s1", "We planned the car trip: the engine needs oil before driving to Lyon."),
    ("", "s2", "Cooking night: pasta and pizza recipes, the kitchen oven is broken."),
    ("u1", "s3", "Ada asked for a refund of invoice INV-2231; billing will send the money."),
    ("u1", "s4", "Refunds again: invoice INV-2232 was paid twice, a refund is pending."),
    ("u2", "s5", "Bob wrote a poem with rhyme about the release of the new server."),
    ("", "s6", "Deploy notes: kubernetes release 1.4 rolled out to every server."),
    ("u1", "s7", "The driving lesson went well; the car engine stalled only once."),
]


def _engine(make_engine: Any, provider: str = "test") -> tuple[Any, Any, EmbedderPlugin]:
    plugin = EmbedderPlugin()
    eng = make_engine(plugins={"embeddings": {"provider": provider}}, extra_plugins=[("emb", plugin)])
    agent = eng.agents.create("epi")
    return eng, agent, plugin


def _add(eng: Any, agent: Any, rows: list[tuple[str, str, str]]) -> None:
    store = eng.service("episodic")
    for user, key, summary in rows:
        store.insert(store.build(NewEpisode(agent.id, user, key, summary, f"src-{key}"), redact_text=False))


def brute_force(rows: list[Any], user: str | None, query: str, limit: int) -> list[tuple[str, float]]:
    """The score of every summary, written out here: the share of the query's distinct terms a
    summary holds × 0.7 + cosine × 0.3 (a channel with nothing positive in the caller's scope:
    the other × 1). Not normalised by the best match: absolute."""
    docs = [set(terms("\n".join([r.summary, r.l0_abstract, " ".join(r.key_topics)]))) for r in rows]
    q = list(dict.fromkeys(query_terms(query)))
    qv = concept_vector(query)
    scope = {"", user or ""}
    lex, cos = {}, {}
    for r, d in zip(rows, docs, strict=True):
        if r.user_id not in scope:
            continue
        lex[r.id] = sum(t in d for t in q) / len(q) if q else 0.0
        cos[r.id] = max(0.0, sum(a * b for a, b in zip(qv, r.embedding.tolist(), strict=True)))
    has_lex = any(v > 0 for v in lex.values())
    has_vec = any(v > 0 for v in cos.values())
    tw, vw = (0.7, 0.3) if has_lex and has_vec else ((1.0, 0.0) if has_lex else (0.0, 1.0))
    fused = {i: tw * lex[i] + vw * cos[i] for i in lex}
    ranked = sorted(((i, s) for i, s in fused.items() if s > 0), key=lambda x: -x[1])
    return ranked[:limit]


def test_no_summaries_costs_no_embedding_and_no_index(make_engine: Any) -> None:
    eng, agent, plugin = _engine(make_engine)
    calls = list(plugin.calls)
    for q in ("refund invoice", "car engine", "anything at all"):
        assert eng.service("episodic").search(agent.id, "u1", q) == []
        assert eng.memory.search(q, "epi", "u1") == []
    assert plugin.calls == [*calls, 1, 1, 1]  # only memory search embedded its queries
    assert searcher(eng).reconciles == 0


@pytest.fixture(scope="module", params=BACKENDS)
def summarised(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Agent "epi" holding SUMMARIES, one engine per database for the queries below (they only
    search)."""
    plugin = EmbedderPlugin()
    with module_engine(
        request.param,
        tmp_path_factory.mktemp("episodic"),
        plugins={"embeddings": {"provider": "test"}},
        extra_plugins=[("emb", plugin)],
    ) as eng:
        agent = eng.agents.create("epi")
        _add(eng, agent, SUMMARIES)
        yield eng, agent


@pytest.mark.parametrize(
    "user,query",
    [
        ("u1", "refund invoice"),
        ("u1", "INV-2231"),
        (None, "car engine driving"),
        ("u2", "poem server release"),
        ("u1", "money"),
        ("u1", "vehicle"),  # no shared word: the vector channel alone
    ],
)
def test_hybrid_scores_match_brute_force(summarised: tuple[Any, Any], user: str | None, query: str) -> None:
    eng, agent = summarised
    rows = eng.service("episodic").list(agent.id, "u1", limit=100) + [
        r for r in eng.service("episodic").list(agent.id, "u2", limit=100, exact_user=True)
    ]
    expected = brute_force(rows, user, query, 5)
    got = eng.service("episodic").search(agent.id, user, query, limit=5)
    assert [round(s, 4) for _r, s in got] == [round(s, 4) for _i, s in expected]
    # Which summary holds which score (ties in any order; the test embedder's constant
    # component makes every unrelated summary a near-tie at ~0.0001).
    assert sorted((round(s, 4), r.id) for r, s in got if s > 0.01) == sorted(
        (round(s, 4), i) for i, s in expected if s > 0.01
    )
    assert got and {r.user_id for r, _s in got} <= {"", user or ""}


def test_without_embedder_full_text_alone(make_engine: Any) -> None:
    eng = make_engine(plugins={"embeddings": {"provider": "none"}})
    agent = eng.agents.create("epi")
    _add(eng, agent, SUMMARIES)
    got = eng.service("episodic").search(agent.id, "u1", "refunds for invoices")  # stems match
    # Both hold both terms: text alone (weight 1), all of the query found, whatever the frequency.
    assert {r.source_id for r, _s in got[:2]} == {"src-s3", "src-s4"}
    assert [s for _r, s in got[:2]] == pytest.approx([1.0, 1.0]) and all(s < 1.0 for _r, s in got[2:])
    assert eng.service("episodic").search(agent.id, "u1", "vehicle") == []


def test_index_follows_inserts_deletes_expiry_and_old_rows(make_engine: Any, monkeypatch: Any) -> None:
    eng, agent, _plugin = _engine(make_engine)
    store = eng.service("episodic")
    _add(eng, agent, SUMMARIES[:2])
    assert [r.source_id for r, _ in store.search(agent.id, None, "pasta", limit=1)] == ["src-s2"]
    _add(eng, agent, [("", "s8", "Pasta again: a lasagne recipe for the kitchen party.")])
    assert "src-s8" in {r.source_id for r, _ in store.search(agent.id, None, "lasagne")}
    with eng.db.engine.begin() as c:  # a row written by an older build: no stored terms
        c.execute(text("UPDATE episodic_summaries SET lex = NULL WHERE source_id = 'src-s1'"))
        c.execute(text("DELETE FROM episodic_summaries WHERE source_id = 'src-s8'"))
    assert "src-s8" not in {r.source_id for r, _ in store.search(agent.id, None, "lasagne")}
    searcher(eng)._states.clear()
    assert [r.source_id for r, _ in store.search(agent.id, None, "oil Lyon", limit=1)] == ["src-s1"]
    with eng.db.engine.begin() as c:
        c.execute(
            text("UPDATE episodic_summaries SET expires_at = :t WHERE source_id = 'src-s2'"),
            {"t": (utcnow() + timedelta(hours=1)).replace(tzinfo=None)},
        )
    assert "src-s2" in {r.source_id for r, _ in store.search(agent.id, None, "pizza")}
    later = utcnow() + timedelta(hours=2)
    monkeypatch.setattr("goclaw_episodic.search.utcnow", lambda: later)
    assert "src-s2" not in {r.source_id for r, _ in store.search(agent.id, None, "pizza")}


def test_upgrade_from_0003_backfills_terms(workspace: Path, database_url: str | None) -> None:
    db = Database.for_workspace(workspace, database_url)
    build_legacy(db, "0003")  # a pre-split database: the kernel's chain made episodic_summaries
    summary = "Refunds for TCK-4471 were processed"
    with db.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO agents (id, tenant_id, name, display_name, agent_type, status, description,"
                " settings, created_at, updated_at) VALUES ('a1', 'default', 'legacy', '', 'open', 'active',"
                " '', '{}', :t, :t)"
            ),
            {"t": "2026-01-01 00:00:00"},
        )
        conn.execute(
            text(
                "INSERT INTO episodic_summaries (id, tenant_id, agent_id, user_id, session_key, summary,"
                " l0_abstract, key_topics, source_type, source_id, turn_count, token_count, created_at)"
                " VALUES ('e1', 'default', 'a1', '', 'k', :s, 'Refunds processed', '[\"TCK-4471\"]',"
                " 'session', 'src', 0, 0, :t)"
            ),
            {"s": summary, "t": "2026-01-01 00:00:00"},
        )
    db.dispose()
    with Engine.open(
        workspace, database_url=database_url, plugins={"embeddings": {"provider": "none"}}
    ) as eng:
        assert migrate.current_revision(eng.db) == migrate.known_revisions()[0]
        with eng.db.engine.connect() as c:
            lex = c.execute(text("SELECT lex FROM episodic_summaries WHERE id = 'e1'")).scalar()
            assert (
                lex == episode_lex(summary, "Refunds processed", ["TCK-4471"]) and "tck-4471" in lex.split()
            )
            if eng.db.backend == "sqlite":
                gone = c.execute(text("SELECT name FROM sqlite_master WHERE name LIKE 'episodic%fts%'")).all()
                assert gone == []
        for q in ("refund", "tck-4471", "processing refunds"):
            assert [r.id for r, _s in eng.service("episodic").search("a1", None, q)] == ["e1"], q


def test_hits_show_the_same_fields_as_the_rows(make_engine: Any) -> None:
    """``hits`` (the memory_search tier) shows what the index keeps of each row: the ORM's values."""
    eng, agent, _plugin = _engine(make_engine)
    _add(eng, agent, SUMMARIES)
    store = eng.service("episodic")
    rows = store.search(agent.id, "u1", "refund invoice car", limit=4)
    hits = store.hits(agent.id, "u1", "refund invoice car", 4)
    assert len(rows) == 4
    assert [(h.id, h.text, h.path, h.scope, h.extra) for h in hits] == [
        (
            r.id,
            r.l0_abstract,
            f"episodic:{r.session_key}",
            "user" if r.user_id else "agent",
            {
                "episodic_id": r.id,
                "source_type": r.source_type,
                "key_topics": list(r.key_topics),
                "created_at": r.created_at.isoformat(),
            },
        )
        for r, _s in rows
    ]


@pytest.mark.postgres
def test_postgres_index_follows_other_writers_through_the_change_counter(
    pg_schema_url: str, workspace: Path
) -> None:
    """PostgreSQL keeps the index in memory too: it is brought up to date when the agent's
    counter (moved by a trigger) changes, whoever wrote, and only then. An UPDATE in place of a
    searched column is seen (the fingerprint covers the row version); one of ``promoted_at``
    moves nothing."""
    opts = {"plugins": {"embeddings": {"provider": "none"}}}
    with (
        Engine.open(workspace, pg_schema_url, **opts) as eng,
        Engine.open(workspace, pg_schema_url, **opts) as other,
    ):
        agent = eng.agents.create("epi")
        store, writer = eng.service("episodic"), other.service("episodic")
        _add(other, agent, SUMMARIES[:2])
        assert [r.source_id for r, _ in store.search(agent.id, None, "pasta", limit=1)] == ["src-s2"]
        done = searcher(eng).reconciles
        for _ in range(3):
            store.search(agent.id, None, "pasta oven")
        assert searcher(eng).reconciles == done  # nothing changed: not even a pass over the rows
        _add(other, agent, [("", "s8", "Lasagne night: the recipe for the kitchen party.")])
        assert "src-s8" in {r.source_id for r, _ in store.search(agent.id, None, "lasagne")}
        writer.promote([r.id for r in writer.list(agent.id, None)])
        store.search(agent.id, None, "lasagne")
        assert searcher(eng).reconciles == done + 1  # promoted_at is not searched
        with other.db.engine.begin() as c:  # rewritten in place: same id, new words
            c.execute(
                text("UPDATE episodic_summaries SET lex = 'risotto mushroom' WHERE source_id = 'src-s8'")
            )
        assert [r.source_id for r, _ in store.search(agent.id, None, "risotto")] == ["src-s8"]
        assert store.search(agent.id, None, "lasagne") == []
        with other.db.engine.begin() as c:
            c.execute(text("DELETE FROM episodic_summaries WHERE source_id = 'src-s8'"))
        assert store.search(agent.id, None, "risotto") == []


def test_a_date_filter_is_applied_before_the_tier_cuts_to_the_limit(make_engine: Any) -> None:
    """Six summaries match a query equally, three created on an old day: a memory search with
    limit 3 and that day as its range returns exactly those three (the tier filters before it
    cuts to the limit, instead of filtering its best three afterwards)."""
    eng, agent, _plugin = _engine(make_engine)
    rows = [("", f"k{i}", f"Kestrel sighting number {i} near the pier.") for i in range(6)]
    _add(eng, agent, rows)
    with eng.db.engine.begin() as c:  # the first three, made on 2026-01-01
        old = (
            "UPDATE episodic_summaries SET created_at = :t WHERE source_id IN ('src-k0', 'src-k1', 'src-k2')"
        )
        c.execute(text(old), {"t": "2026-01-01 09:00:00"})
    searcher(eng)._states.clear()
    window = {"since": "2026-01-01", "until": "2026-01-01"}
    hits = [
        h
        for h in eng.memory.search("kestrel sighting", "epi", limit=3, filters=window)
        if h.tier == "episodic"
    ]
    assert sorted(h.path for h in hits) == ["episodic:k0", "episodic:k1", "episodic:k2"]
