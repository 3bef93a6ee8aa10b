"""Agents as the unit of sharding on PostgreSQL: every statement that indexing, adding or searching
sends to the memory tables is bound to the one agent it serves, and an agent's rows copied into
another database (another schema here) with the statements docs/postgres.md gives search there
exactly as they did at home, under both search backends."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text

from goclaw.engine import Engine
from goclaw.forget import forget_agent
from goclaw_memory.testing.fixtures import private_schema
from tests.memory_helpers import run_script, search_all, seed_agent, sql_block, write

pytestmark = pytest.mark.postgres

BACKENDS = ["postgresql", "inprocess"]
# The tables of an agent's memory: files, chunks, the postgresql backend's statistics and
# postings, episodic summaries and knowledge-graph facts.
TABLES = re.compile(
    r"\b(memory_(chunks|documents|term_stats|agent_stats|packed|packed_agents|delta|ords|tombs|sketches)|"
    r"episodic_(summaries|versions)|kg_(entities|relations|dedup_candidates))\b"
)
# The one statement of every agent's: the HNSW index of a dimension spans all agents' chunks of
# it, built once (after the first load of that dimension) by the postgresql backend.
OWN_IDS = ("memory_documents", "episodic_summaries", "kg_entities", "kg_relations")
SHARED = re.compile(
    r"^(CREATE INDEX IF NOT EXISTS ix_memory_chunks_hnsw_\d+ |"
    r"SELECT count\(\*\) FROM memory_chunks WHERE embedding_dim = )"
)


def schema_of(url: str) -> str:
    found = re.search(r"search_path%3D(\w+)", url)
    assert found is not None
    return found.group(1)


def flat(value: Any) -> list[Any]:
    """Every scalar in a statement's parameters (dicts, rows, lists of rows, arrays)."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in flat(v)]
    if isinstance(value, list | tuple):
        return [x for v in value for x in flat(v)]
    return [value]


def open_engine(workspace: Path, url: str, backend: str) -> Any:
    workspace.mkdir(exist_ok=True)
    return Engine.open(workspace, url, plugins={"memory": {"backend": backend}})


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_statement_crosses_agents(backend: str, pg_schema_url: str, tmp_path: Path) -> None:
    eng = open_engine(tmp_path / "ws", pg_schema_url, backend)
    try:
        ids = {eng.agents.create(name).id: name for name in ("ada", "bob")}
        eng.memory.search("kettle", "ada")  # under postgresql, installs its triggers (counting all)
        sent: list[tuple[str, str, Any]] = []  # (the agent served, statement, parameters)
        serving = [""]
        event.listen(
            eng.db.engine,
            "before_cursor_execute",
            lambda _c, _cur, statement, params, _ctx, _many: sent.append((serving[0], statement, params)),
        )
        owner = {aid: aid for aid in ids}  # every row id's agent (deleted rows' too)

        def remember() -> None:
            serving[0], aid = "", serving[0]  # the test's own statements
            with eng.db.engine.connect() as c:
                for table in OWN_IDS:
                    owner.update(c.execute(text(f"SELECT id, agent_id FROM {table}")).all())
            serving[0] = aid

        for rounds in range(2):  # each agent's writes and searches, taking turns
            for aid, name in ids.items():
                serving[0] = aid
                root = seed_agent(eng, name, kettles=4 if name == "ada" else 2)
                remember()
                eng.memory.writer.add(name, f"{name} moves the walrus kettle, round {rounds}", tags=["zoo"])
                remember()
                write(root, "memory/ferry.md", f"The ferry of {name} leaves late, round {rounds}.\n")
                (root / "memory/k0.md").unlink(missing_ok=True)
                eng.memory.index(name)
                assert all(search_all(eng, name))
        checked, shared, crossing = 0, 0, []
        for aid, statement, params in sent:
            if not aid or not TABLES.search(re.sub(r"'[^']*'", "''", statement)):  # not a catalog's name
                continue
            if SHARED.match(statement):
                shared += 1
                continue
            checked += 1
            values = flat(params)
            # The agent's id compared with agent_id, or ids of the agent's own rows.
            owners = {owner[v] for v in values if isinstance(v, str) and v in owner}
            bound = owners == {aid} and ("agent_id" in statement or aid not in values)
            if not owners:  # the agent's documents, by their integer ids
                docs = {owner.get(v) for v in values if isinstance(v, int)}
                bound = "document_id" in statement and docs == {aid}
            if not bound:
                crossing.append(f"{statement} {params}"[:600])
        assert not crossing, "\n".join(crossing)
        assert checked > 100 and shared <= 2
    finally:
        eng.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_agent_copied_to_another_database_searches_alike(
    backend: str, pg_schema_url: str, tmp_path: Path
) -> None:
    home = open_engine(tmp_path / "home", pg_schema_url, backend)
    with private_schema() as other:
        there = open_engine(tmp_path / "there", other, backend)
        try:
            seed_agent(home, "ada", kettles=4)
            seed_agent(home, "bob", kettles=1)
            seed_agent(there, "cy", kettles=2)  # ids of its own, equal to some of home's
            want, cy = search_all(home, "ada"), search_all(there, "cy")
            aid = home.agents.get("ada").id
            move = sql_block("-- goclaw: copy one agent")
            run_script(
                other,
                move.replace(":'agent'", f"'{aid}'").replace("staging.", f"{schema_of(pg_schema_url)}."),
            )
            assert search_all(there, "ada") == want
            assert search_all(there, "cy") == cy
            # Its files follow; an index run there finds nothing to do.
            shutil.copytree(home.agent_dir(home.agents.get("ada")), there.agent_dir(there.agents.get("ada")))
            report = there.memory.index("ada")
            assert (report.chunks_written, report.chunks_embedded, report.removed) == (0, 0, 0)
            assert search_all(there, "ada") == want
            # Gone from home, nothing else changes there.
            bob = search_all(home, "bob")
            forget_agent(home, "ada", dry_run=False)
            assert search_all(home, "bob") == bob
        finally:
            there.close()
            home.close()
