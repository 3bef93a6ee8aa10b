"""Memory search's per-query SQL stays on the primary key (for query speed): reading a search's
rows by id must not walk the agent's whole scope index (that costs 1.2 ms instead of 0.13 ms for
60 rows at 10k chunks, 10x more at 100k)."""

from __future__ import annotations

from pathlib import Path

from goclaw.engine import Engine


def test_rows_by_id_use_the_primary_key(workspace: Path) -> None:
    eng = Engine.open(workspace)
    try:
        eng.agents.create("a")
        mem = Path(eng.agent_dir(eng.agents.get("a"))) / "memory"
        mem.mkdir(parents=True, exist_ok=True)
        for n in range(30):
            (mem / f"n{n}.md").write_text(f"# note {n}\n\nsomething about topic {n}\n", encoding="utf-8")
        eng.memory.index("a")
        agent_id = eng.agents.get("a").id
        backend = eng.memory.backend
        hits = eng.memory.search("topic", "a", limit=5)
        ids = [h.chunk_id for h in hits if h.chunk_id is not None]
        assert ids
        conn = backend._conn()
        seen: list[str] = []
        conn.set_trace_callback(seen.append)
        try:
            rows = backend.rows(agent_id, ids)
        finally:
            conn.set_trace_callback(None)
        assert set(rows) == set(ids)
        statement = next(s for s in seen if "FROM memory_chunks" in s)
        plan = " ".join(str(r[-1]) for r in conn.execute("EXPLAIN QUERY PLAN " + statement))
        assert "PRIMARY KEY" in plan, plan
        assert backend.rows("someone-else", ids) == {}
    finally:
        eng.close()
