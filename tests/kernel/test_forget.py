"""``forget``: erase one user across files, index, sessions, episodic memory, KG facts,
channel memory and cached embeddings; dry run first; every other row and file counted intact."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from goclaw.events import WorkerRunner
from tests.consolidation_helpers import end_session, record_session
from tests.helpers import run_cli
from tests.memory_helpers import write

SHARED = "The office is closed on public holidays.\n"  # the same text in u1's and u2's files
TALK = [
    ("user", "Alice Smith will lead Project Atlas and we chose Postgres for storage."),
    ("assistant", "Noted: Alice Smith leads Project Atlas, storage on Postgres."),
]


def _populate(engine: Any) -> None:
    for name in ("ada", "bob"):
        agent = engine.agents.create(name)
        d = engine.agent_dir(agent)
        write(d, "MEMORY.md", f"{name}'s team notes.\n")
        for user in ("u1", "u2"):
            write(d, f"users/{user}/memory/2026-01-01.md", f"{user} private note for {name}.\n\n{SHARED}")
            engine.files.set(name, "USER.md", f"- **Name:** {user}\n", user=user)
            record_session(engine, agent, f"{name}-{user}-s1", user, TALK)
            end_session(engine, agent, f"{name}-{user}-s1", user)
        engine.service("channel_memory").configure(name, "general", enabled=True)
        for user in ("u1", "u2"):
            msgs = [{"user": user, "content": f"{user} says we ship the Atlas release on Friday."}]
            engine.service("channel_memory").ingest(name, "general", msgs, user=user)
    engine.memory.index()
    engine.memory.writer.add("ada", "u1 prefers tea.", "u1")
    WorkerRunner(engine).run_once()


def _census(engine: Any) -> dict[str, Counter[str]]:
    """Rows per table, by user_id where the table has one (else all under '*')."""
    from sqlalchemy import func, select
    from sqlmodel import SQLModel

    out: dict[str, Counter[str]] = {}
    with engine.db.engine.connect() as conn:
        for name, t in SQLModel.metadata.tables.items():
            if "user_id" in t.c:
                rows = conn.execute(select(t.c.user_id, func.count()).group_by(t.c.user_id)).all()
                out[name] = Counter({str(u): int(n) for u, n in rows})
            else:
                out[name] = Counter(
                    {"*": int(conn.execute(select(func.count()).select_from(t)).scalar_one())}
                )
    return out


def _files(ws: Path) -> Counter[str]:
    return Counter("u1" if "/users/u1/" in p.as_posix() else "other" for p in ws.rglob("*.md") if p.is_file())


def test_forget_erases_one_user_and_nothing_else(engine: Any, workspace: Path) -> None:
    _populate(engine)
    before = _census(engine)
    files_before = _files(workspace)
    for table in ("memory_chunks", "sessions", "episodic_summaries", "kg_entities", "user_context_files"):
        assert before[table]["u1"] > 0 and before[table]["u2"] > 0, table
    assert before["channel_memory_extraction_items"]["u1"] > 0
    from goclaw.forget import forget_user

    dry = forget_user(engine, "u1")
    assert dry.dry_run and dry.files == files_before["u1"] == 3 and len(dry.folders) == 2
    for table in ("memory_chunks", "memory_documents", "sessions", "session_messages", "episodic_summaries"):
        assert dry.rows[table] > 0, table
    assert dry.rows["embedding_cache"] >= 2  # u1's own texts; the text u2 shares keeps its row
    assert _census(engine) == before and _files(workspace) == files_before  # a dry run changes nothing

    done = forget_user(engine, "u1", dry_run=False)
    assert not done.dry_run and done.rows == dry.rows and done.files == dry.files
    after = _census(engine)
    for table, counts in before.items():
        if table in ("session_messages", "event_deliveries", "embedding_cache", "worker_state"):
            assert after[table]["*"] == counts["*"] - dry.rows.get(table, 0), table
            continue
        assert after[table]["u1"] == 0, table
        others = Counter({u: n for u, n in counts.items() if u != "u1"})
        assert +after[table] == +others, table  # every other user's and the agent level's rows intact
    assert _files(workspace) == Counter({"other": files_before["other"]})
    # u2 still finds the shared text, by both channels; u1 finds nothing of their own
    hits = engine.memory.search("office closed public holidays", "ada", "u2")
    assert hits and hits[0].path == "users/u2/memory/2026-01-01.md"
    assert not [h for h in engine.memory.search("private note tea", "ada", "u1") if h.scope == "user"]
    assert forget_user(engine, "u1").total_rows == 0


def test_cli_forget_dry_run_then_yes(engine: Any, workspace: Path, database_url: str | None) -> None:
    engine.agents.create("ada")
    write(engine.agent_dir(engine.agents.get("ada")), "users/zed/MEMORY.md", "zed's note\n")
    engine.memory.index()
    args = {"workspace": workspace, "database_url": database_url}
    res = run_cli(["forget", "--user", "zed", "--json"], **args)
    assert res.code == 0, res.err
    report = json.loads(res.out)
    assert report["dry_run"] and report["files"] == 1 and report["rows"]["memory_chunks"] == 1
    assert (engine.agent_dir(engine.agents.get("ada")) / "users/zed/MEMORY.md").exists()
    res = run_cli(["forget", "--user", "zed", "--yes"], **args)
    assert res.code == 0 and "erased for user 'zed'" in res.out and "memory_chunks: 1" in res.out
    assert not (engine.agent_dir(engine.agents.get("ada")) / "users/zed").exists()
    for bad in (["forget", "--user", "../x", "--yes"], ["forget", "--user", "zed", "--agent", "nobody"]):
        res = run_cli(bad, **args)
        assert res.code != 0 and res.err.startswith("error:") and "Traceback" not in res.err


def test_forget_an_agent_leaves_every_other_agent_intact(engine: Any, workspace: Path) -> None:
    from sqlalchemy import func, select
    from sqlmodel import SQLModel

    from goclaw.forget import forget_agent

    _populate(engine)
    engine.agents.link("bob", "ada")  # a link to the erased agent goes with it
    ada_id, bob_id = engine.agents.get("ada").id, engine.agents.get("bob").id

    def by_agent() -> dict[str, Counter[str]]:
        out: dict[str, Counter[str]] = {}
        with engine.db.engine.connect() as conn:
            for name, t in SQLModel.metadata.tables.items():
                col = t.c.get("agent_id") if "agent_id" in t.c else (t.c.id if name == "agents" else None)
                if col is not None:
                    rows = conn.execute(select(col, func.count()).group_by(col)).all()
                    out[name] = Counter({str(a): int(n) for a, n in rows})
        return out

    before = by_agent()
    bob_files = sorted(
        p.relative_to(workspace) for p in (workspace / "agents" / "bob").rglob("*") if p.is_file()
    )
    assert before["memory_chunks"][ada_id] > 0 and before["sessions"][ada_id] > 0
    dry = forget_agent(engine, "ada")
    assert dry.rows["agents"] == 1 and dry.files > 0 and by_agent() == before
    forget_agent(engine, "ada", dry_run=False)
    after = by_agent()
    for table, counts in before.items():
        assert after[table][ada_id] == 0, table
        assert after[table][bob_id] == counts[bob_id], table
    assert not (workspace / "agents" / "ada").exists()
    assert (
        sorted(p.relative_to(workspace) for p in (workspace / "agents" / "bob").rglob("*") if p.is_file())
        == bob_files
    )
    assert [a.name for a in engine.agents.list()] == ["bob"] and engine.agents.links("bob") == []
    assert engine.memory.search("office closed public holidays", "bob", "u2")
