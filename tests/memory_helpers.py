"""Helpers for the memory tests: the shipped test kit's (:mod:`goclaw_memory.testing.helpers`)
and the repository's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from goclaw_memory.testing import helpers
from goclaw_memory.testing.helpers import (  # noqa: F401 - re-exported
    EmbedderPlugin,
    FailingEmbedder,
    HashEmbedder,
    chunk_rows,
    write,
)


def saved_index(eng: Any, name: str = "ada") -> tuple[Any, str, Path]:
    """Agent ``name`` created with one note, indexed, searched (its index loaded) and the index
    saved by the SQLite backend: ``(backend, agent id, the saved index's folder)``."""
    root = Path(eng.agent_dir(eng.agents.create(name)))
    write(root, "MEMORY.md", f"The harbour ferry of {name} leaves at noon on Sundays.\n")
    eng.memory.index(name)
    assert eng.memory.search("harbour ferry", name)
    backend = eng.memory.backend
    aid = eng.agents.get(name).id
    path = backend._snapshot(aid)
    assert path is not None and backend.save(aid) == path
    return backend, aid, path


def open_with_backend(url: str | None, workspace: Path, backend: str) -> Any:
    """An engine on ``url`` with no embedder and the memory search backend ``backend``."""
    from goclaw.engine import Engine

    plugins = {"embeddings": {"provider": "none"}, "memory": {"backend": backend}}
    return Engine.open(workspace, url, plugins=plugins)


def index_kettle_and_ferry(eng: Any, name: str = "ada") -> Path:
    """Agent ``name`` (created unless it exists) with two notes, a.md (the kettle) and b.md (the
    ferry), indexed; returns the agent's folder."""
    known = any(a.name == name for a in eng.agents.list())
    agent = eng.agents.get(name) if known else eng.agents.create(name)
    root = Path(eng.agent_dir(agent))
    write(root, "memory/a.md", "The kettle whistles; the kettle is old.\n")
    write(root, "memory/b.md", "The ferry leaves at noon.\n")
    eng.memory.index(name)
    return root


def pg_postings(eng: Any) -> set[tuple[str, int]]:
    """The ``postgresql`` backend's postings as (term, chunk id): the packed lists' ordinals
    mapped to chunk ids (tombstoned ones left out) and the delta's rows."""
    with eng.db.engine.connect() as c:
        return pg_postings_of(c)


def pg_postings_of(c: Any) -> set[tuple[str, int]]:
    """:func:`pg_postings` on an open connection."""
    import numpy as np
    from sqlalchemy import text

    out: set[tuple[str, int]] = set()
    ids = {
        (a, int(o)): int(i) for a, o, i in c.execute(text("SELECT agent_id, ord, chunk_id FROM memory_ords"))
    }
    for agent, term, ords in c.execute(text("SELECT agent_id, term, ords FROM memory_packed")):
        for o in np.frombuffer(ords, ">i4"):
            if (agent, int(o)) in ids:
                out.add((term, ids[agent, int(o)]))
    out |= {(r[0], int(r[1])) for r in c.execute(text("SELECT term, chunk_id FROM memory_delta"))}
    return out


class CountingEmbedder(helpers.CountingEmbedder):
    """The kit's counting embedder around the real static embedder, made here (the repository's
    tests may import the embeddings plugin)."""

    def __init__(self) -> None:
        from goclaw_embeddings.static_model import StaticEmbedder

        super().__init__(StaticEmbedder())


# Searches of every kind a memory search runs: full text, vector, hybrid, a user's scope, tag and
# path filters, and the episodic and knowledge-graph tiers (which read the database too).
SEARCHES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("kettle", {"channel": "lexical"}),
    ("boiling water for tea", {"channel": "vector"}),
    ("ferry kettle noon", {}),
    ("kettle", {"user": "u1"}),
    ("green tea", {"filters": {"tags": ["tea"]}}),
    ("kettle", {"filters": {"path": "memory/k"}, "channel": "lexical"}),
    ("where does Alice work", {}),
    ("what did we talk about", {}),
)


def seed_agent(eng: Any, name: str, kettles: int) -> Path:
    """Agent ``name`` (created unless it exists) with ``kettles`` notes on kettles and one on the
    ferry (words every agent has, in other proportions: a statistic read across agents would
    change their BM25), a note of user u1, a tagged memory, an episodic summary and a
    knowledge-graph fact; indexed. Returns the agent's folder."""
    from datetime import UTC, datetime

    from goclaw.contracts.memory import NewEpisode
    from tests.consolidation_helpers import alice_works_at_acme

    known = any(a.name == name for a in eng.agents.list())
    agent = eng.agents.get(name) if known else eng.agents.create(name)
    root = Path(eng.agent_dir(agent))
    for i in range(kettles):
        write(root, f"memory/k{i}.md", f"The kettle {i} of {name} whistles at noon; kettle number {i}.\n")
    write(root, "memory/ferry.md", f"The ferry of {name} leaves at noon with the kettle crew.\n")
    write(root, "users/u1/memory/own.md", f"u1 keeps a copper kettle for {name}.\n")
    write(
        root,
        "memory/tea.md",
        f"<!-- goclaw-memory id=mem_{name} added=2026-01-01T00:00:00Z tags=tea -->\n"
        f"{name} likes green tea boiled in the kettle.\n",
    )
    eng.memory.index(name)
    store = eng.service("episodic")
    store.insert(
        store.build(
            NewEpisode(agent.id, "", f"s-{name}", f"We talked about the kettle of {name}", f"src-{name}"),
            redact_text=False,
        )
    )
    eng.db.run_write(
        lambda s: alice_works_at_acme(eng, s, agent.id, datetime(2026, 1, 1, tzinfo=UTC), "works_at")
    )
    return root


def search_all(eng: Any, agent: str) -> list[list[dict[str, Any]]]:
    """The hits of every search of :data:`SEARCHES` for ``agent``, as the CLI and tools show them."""
    return [[h.as_json() for h in eng.memory.search(q, agent, **kw)] for q, kw in SEARCHES]


def sql_block(first_line: str) -> str:
    """The ```sql block of docs/postgres.md that starts with ``first_line`` (the statements the
    docs give operators, run by the tests as they stand there)."""
    import re
    import textwrap

    docs = Path(__file__).resolve().parents[1] / "docs" / "postgres.md"
    for _indent, block in re.findall(r"(?ms)^( *)```sql\n(.*?)^\1```", docs.read_text(encoding="utf-8")):
        block = textwrap.dedent(block)
        if block.startswith(first_line):
            return str(block)
    raise AssertionError(f"docs/postgres.md has no sql block starting {first_line!r}")


def run_script(url: str, sql: str) -> None:
    """``sql`` (several statements, as ``psql -f`` runs them) on a connection of its own to ``url``."""
    from sqlalchemy import create_engine

    engine = create_engine(url)
    try:
        raw = engine.raw_connection()
        try:
            raw.driver_connection.autocommit = True
            raw.driver_connection.execute(sql)
        finally:
            raw.close()
    finally:
        engine.dispose()
