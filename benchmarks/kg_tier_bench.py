#!/usr/bin/env python3
"""Benchmark the knowledge-graph tier of memory search: what every ``memory_search`` pays for
the KG's facts, and with the episodic tier, what both pay when nothing changed.

    python benchmarks/kg_tier_bench.py [--facts N] [--unchanged-only]

Rows, per backend (SQLite; PostgreSQL when ``GOCLAW_BENCH_DATABASE_URL`` or
``GOCLAW_TEST_DATABASE_URL`` is set), medians over 30 queries of the hook's work alone
(:func:`goclaw_kg.memory_tier.fact_hits`, limit 6):

* ``0 facts``: an agent with an empty graph;
* ``N facts``: the same agent with N current facts (half entities, half relations between
  them, random words, a third of them in user scopes);
* ``N facts, after a write``: each search preceded by one entity insert (not timed), so the
  tier has to bring what it knows up to date.

And per backend, in the same run, what the two tiers that ask every ``memory_search`` for
hits (knowledge graph, episodic summaries: each plugin's ``goclaw_memory_search_extra``) pay
when nothing changed since the last search, medians of 300 searches:

* ``nothing changed, empty``: an agent with no fact and no summary;
* ``nothing changed, small``: an agent with 20 facts and 10 summaries, unchanged.

Each tier on its own, then both in a row (what a ``memory_search`` pays for them).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench_rows import row as _row

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "plugins"), str(ROOT / "benchmarks")]


def _median_ms(fn: Any, qs: list[str], before: Any = None) -> float:
    fn(qs[0])  # warm-up
    times = []
    for q in qs:
        if before is not None:
            before()
        t0 = time.perf_counter_ns()
        fn(q)
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1e6


def _graph(engine: Any, agent_id: str, n: int, seed: int = 11) -> None:
    """``n`` current facts: ``n // 2`` entities, then as many relations between them."""
    from memory_bench import WORDS
    from sqlalchemy import insert

    from goclaw_kg.tables import KGEntity, KGRelation

    rng = random.Random(seed)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    ents, rels = [], []
    for i in range(n // 2):
        name = f"{rng.choice(WORDS)} {rng.choice(WORDS)} {i}"
        when = t0 + timedelta(minutes=i)
        ents.append(
            {"id": f"e{i}", "tenant_id": "default", "agent_id": agent_id,
             "user_id": "" if i % 3 else f"u{i % 5}", "name": name, "normalized_name": name.lower(),
             "entity_type": rng.choice(["person", "thing", "place"]),
             "description": " ".join(rng.choices(WORDS, k=6)), "confidence": 1.0, "properties": {},
             "source_id": "", "valid_from": when, "created_at": when, "updated_at": when}
        )  # fmt: skip
    for i in range(n - n // 2):
        a, b = rng.sample(range(len(ents)), 2)
        user = ents[a]["user_id"] if ents[a]["user_id"] == ents[b]["user_id"] else ""
        when = t0 + timedelta(minutes=i)
        rels.append(
            {"id": f"r{i}", "tenant_id": "default", "agent_id": agent_id, "user_id": user,
             "source_entity_id": f"e{a}", "target_entity_id": f"e{b}",
             "relation_type": f"{rng.choice(WORDS)}_{i}", "confidence": 1.0, "properties": {},
             "source_id": "", "valid_from": when, "created_at": when}
        )  # fmt: skip
    with engine.db.engine.begin() as conn:
        conn.execute(insert(KGEntity.__table__), ents)  # type: ignore[attr-defined]
        conn.execute(insert(KGRelation.__table__), rels)  # type: ignore[attr-defined]


def bench_backend(tmp: Path, backend: str, url: str | None, facts: int) -> list[dict[str, Any]]:
    from memory_bench import queries

    from goclaw.engine import Engine
    from goclaw_kg.memory_tier import fact_hits

    (tmp / backend).mkdir()
    eng = Engine.open(tmp / backend, url, plugins={"embeddings": {"provider": "none"}})
    try:
        agent = eng.agents.create("bench")
        qs = queries(31)
        name = "SQLite" if backend == "sqlite" else "PostgreSQL"
        rows = []

        def tier(q: str) -> Any:
            return fact_hits(eng, q, agent, None, 6)

        rows.append(_row(f"kg tier per search, 0 facts ({name})", _median_ms(tier, qs), "ms"))
        _graph(eng, agent.id, facts)
        assert any(tier(q) for q in qs), "the kg tier finds nothing: the benchmark measures nothing"
        rows.append(_row(f"kg tier per search, {facts:,} facts ({name})", _median_ms(tier, qs), "ms"))
        written = iter(range(10**6))

        def write() -> None:
            eng.db.run_write(
                lambda s: eng.kg.upsert_entity(
                    s, agent_id=agent.id, user_id="", name=f"fresh {next(written)}", entity_type="thing"
                )
            )

        after = _median_ms(tier, qs, write)
        rows.append(_row(f"kg tier per search, {facts:,} facts, after a write ({name})", after, "ms"))
        return rows
    finally:
        eng.close()


def bench_unchanged(tmp: Path, backend: str, url: str | None) -> list[dict[str, Any]]:
    """The two tiers' cost per search when nothing changed (see the module docstring)."""
    from memory_bench import queries

    from goclaw.contracts.memory import NewEpisode
    from goclaw.engine import Engine
    from goclaw_episodic import plugin as episodic
    from goclaw_kg import plugin as kg

    (tmp / f"unchanged-{backend}").mkdir()
    eng = Engine.open(tmp / f"unchanged-{backend}", url, plugins={"embeddings": {"provider": "none"}})
    try:
        name = "SQLite" if backend == "sqlite" else "PostgreSQL"
        qs = queries(30) * 10
        empty, small = eng.agents.create("empty"), eng.agents.create("small")
        _graph(eng, small.id, 20)
        store = eng.service("episodic")
        for i, q in enumerate(queries(10, seed=5)):
            store.insert(store.build(NewEpisode(small.id, "", f"s{i}", f"we talked about {q}", f"src{i}")))

        def kg_tier(agent: Any) -> Any:
            return lambda q: kg.goclaw_memory_search_extra(eng, q, agent, None, 6, False)

        def episodic_tier(agent: Any) -> Any:
            return lambda q: episodic.goclaw_memory_search_extra(eng, q, agent, None, 6, None)

        def both(agent: Any) -> Any:
            one, two = kg_tier(agent), episodic_tier(agent)
            return lambda q: (one(q), two(q))

        assert any(kg_tier(small)(q) for q in qs) and any(episodic_tier(small)(q) for q in qs)
        rows = []
        for label, agent in (("empty", empty), ("small", small)):
            for tier, make in (("kg tier", kg_tier), ("episodic tier", episodic_tier), ("both tiers", both)):
                value = _median_ms(make(agent), qs)
                rows.append(_row(f"{tier} per search, nothing changed, {label} ({name})", value, "ms"))
        return rows
    finally:
        eng.close()


def run(facts: int, unchanged_only: bool = False) -> list[dict[str, Any]]:
    from consolidation_bench import _PgSchema

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HOME"] = str(Path(tmp) / "home")
        rows += bench_unchanged(Path(tmp), "sqlite", None)
        base = os.environ.get("GOCLAW_BENCH_DATABASE_URL") or os.environ.get("GOCLAW_TEST_DATABASE_URL")
        if base:
            schema = _PgSchema(base)
            try:
                rows += bench_unchanged(Path(tmp), "postgresql", schema.url)
            finally:
                schema.drop()
        if unchanged_only:
            return rows
        rows += bench_backend(Path(tmp), "sqlite", None, facts)
        if base:
            schema = _PgSchema(base)
            try:
                rows += bench_backend(Path(tmp), "postgresql", schema.url, facts)
            finally:
                schema.drop()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=20_000)
    parser.add_argument("--unchanged-only", action="store_true", help="only the nothing-changed rows")
    args = parser.parse_args()
    print("| benchmark | value | unit |")
    print("|---|---:|---|")
    for r in run(args.facts, args.unchanged_only):
        print(f"| {r['name']} | {r['value']:.4g} | {r['unit']} |")


if __name__ == "__main__":
    main()
