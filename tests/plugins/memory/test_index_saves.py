"""The in-memory engine's saved index (next to the SQLite database; in the workspace under
``inprocess`` on PostgreSQL) and ``invalidate``: what a forget erases must never be written
back to disk by a save that was already under way."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.memory_helpers import write

# The in-memory engine's: on PostgreSQL ``inprocess`` (``auto`` selects ``postgresql`` there).
pytestmark = pytest.mark.usefixtures("in_memory_search")


@pytest.fixture
def eng(make_engine: Any, backend: str) -> Any:
    if backend != "sqlite":
        pytest.skip("the saved index exists next to a SQLite file only")
    e = make_engine()
    agent = e.agents.create("ada")
    write(Path(e.agent_dir(agent)), "MEMORY.md", "The harbour ferry leaves at noon on Sundays.\n")
    e.memory.index("ada")
    assert e.memory.search("harbour ferry", "ada")  # the index is loaded
    return e


def test_a_save_racing_an_invalidate_writes_nothing(eng: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``save`` fetches the loaded index, then writes it; an ``invalidate`` (a forget) that runs
    in between must win: without the guard the forgotten agent's terms went back on disk."""
    backend = eng.memory.backend
    agent_id = eng.agents.get("ada").id
    path = backend._snapshot(agent_id)
    assert path is not None
    real = backend._snapshot
    raced: list[bool] = []

    def snapshot(aid: str) -> Path | None:
        # save() calls this after fetching the state: the forget lands right then (once)
        if not raced:
            raced.append(True)
            backend.invalidate(aid)
        return real(aid)

    monkeypatch.setattr(backend, "_snapshot", snapshot)
    assert backend.save(agent_id) is None
    assert raced and not path.exists()


def test_a_save_after_the_next_load_is_written(eng: Any) -> None:
    """The guard is per loaded index: once a search loads the agent again, it saves again."""
    backend = eng.memory.backend
    agent_id = eng.agents.get("ada").id
    backend.invalidate(agent_id)
    path = backend._snapshot(agent_id)
    assert path is not None and not path.exists()
    assert eng.memory.search("harbour ferry", "ada")
    assert backend.save(agent_id) == path and path.exists()


def _agent(eng: Any, name: str, agent_id: str, note: str) -> str:
    """Agent ``name`` with the id ``agent_id`` (ids come from a database, not only from
    ``agents.create``) and one indexed note; returns the id."""
    from goclaw.contracts.store import Agent

    with eng.db.write() as session:
        session.add(Agent(id=agent_id, tenant_id=eng.settings.tenant_id, name=name))
    write(Path(eng.agent_dir(eng.agents.get(name))), "MEMORY.md", note)
    eng.memory.index(name)
    return agent_id


def test_agent_ids_that_clean_to_one_file_name_keep_their_own_saved_index(make_engine: Any) -> None:
    """``<agent>.idx`` was the id with every other character than letters, digits, '-' and '_'
    made '_': agents "a.b" and "a_b" shared one file, each overwriting or loading the other's.
    An id that needed cleaning now gets a hash of itself in the name; a plain one keeps it."""
    eng = make_engine()
    dotted = _agent(eng, "dotted", "a.b", "Dotted: the kestrel quarry opens on Mondays.\n")
    plain = _agent(eng, "plain", "a_b", "Plain: the heron wharf closes on Fridays.\n")
    backend = eng.memory.backend
    paths = {aid: backend._snapshot(aid) for aid in (dotted, plain)}
    assert paths[plain] is not None and paths[plain].name == "a_b.idx"  # unchanged: still loads
    assert paths[dotted] is not None and paths[dotted] != paths[plain]
    assert all(p is not None and p.exists() for p in paths.values())
    eng.close()
    again = make_engine()  # a new process: each agent loads its own saved index
    for name, query in (("dotted", "kestrel quarry"), ("plain", "heron wharf")):
        hits = again.memory.search(query, name)
        assert hits and {h.snippet.split(":")[0].lower() for h in hits} == {name}, hits
    assert again.memory.backend.loads == 0  # loaded, neither rebuilt from the table


def test_a_saved_index_of_another_agent_is_not_loaded(make_engine: Any) -> None:
    """A saved index records whose it is: one found at another agent's path (two names one file
    on a case-insensitive disk, a folder copied by hand) is rebuilt, not searched, even when
    the version tokens agree (agents whose rows carry none)."""
    from sqlalchemy import text

    from goclaw_memory.version_token import VERSION_WORKER

    eng = make_engine()
    ada = _agent(eng, "ada", "ada", "Ada's secret: the zebulon vault opens at dawn.\n")
    bob = _agent(eng, "bob", "bob", "Bob's note: the zebulon ferry is late.\n")
    backend = eng.memory.backend
    ada_path, bob_path = backend._snapshot(ada), backend._snapshot(bob)
    assert ada_path is not None and bob_path is not None and backend.save(ada) == ada_path
    shutil.rmtree(bob_path, ignore_errors=True)
    shutil.copytree(ada_path, bob_path)
    with eng.db.engine.begin() as conn:  # bob's token made ada's: only the file tells them apart
        conn.execute(
            text(
                "UPDATE worker_state SET value = (SELECT value FROM worker_state WHERE worker = :w "
                "AND scope = :a) WHERE worker = :w AND scope = :b"
            ),
            {"w": VERSION_WORKER, "a": ada, "b": bob},
        )
    backend._states.clear()  # as a new process
    hits = eng.memory.search("zebulon", "bob")
    assert [h.snippet for h in hits] == ["Bob's note: the zebulon ferry is late."], hits


@pytest.mark.parametrize("how", ["save", "save_copy"])
def test_a_save_whose_folder_an_invalidate_deletes_is_dropped_without_a_back_off(
    eng: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    """``invalidate(None)`` drops the loaded indexes, then deletes the whole folder. A state made
    in between (a search or an index run loading the agent afresh) is not dropped, and its save
    failed when the folder went under it: that was taken for an unwritable disk, a warning and
    no save for RETRY_SAVE seconds. Now only that save is dropped."""
    import logging

    from goclaw_memory.deferred_sketches import save_copy
    from goclaw_search import persist

    backend = eng.memory.backend
    agent_id = eng.agents.get("ada").id
    path = backend._snapshot(agent_id)
    st = backend._states[agent_id]
    real = persist.tempfile.mkdtemp
    raced: list[bool] = []

    def mkdtemp(*args: Any, **kwargs: Any) -> str:
        made = real(*args, **kwargs)
        if not raced:  # the save has begun writing: invalidate(None) runs now, and the state
            raced.append(True)  # is one made after it dropped the loaded ones
            backend._states.pop(agent_id)
            backend.invalidate(None)
            backend._states[agent_id] = st
        return made

    monkeypatch.setattr(persist.tempfile, "mkdtemp", mkdtemp)
    with caplog.at_level(logging.INFO, logger="goclaw_memory"):
        got = backend.save(agent_id) if how == "save" else save_copy(backend, agent_id, st)
    assert raced and got is None and not backend._unsaveable
    assert not [r for r in caplog.records if "could not save" in r.getMessage()]
    monkeypatch.undo()
    assert backend.save(agent_id) == path and path is not None and path.exists()  # saves go on
