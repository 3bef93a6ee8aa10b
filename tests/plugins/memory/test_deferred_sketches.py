"""A large index run's passage sketches and save after ``index()`` returns (for indexing
speed; goclaw_memory.deferred_sketches): the index is searchable at once with the hits and
scores of the finished one, the saved index waits for the sketches, ``close`` waits for the
work, and a process killed meanwhile leaves a workspace whose next process searches right."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.memory_helpers import write
from tests.plugins.memory.test_passage_sketches import MORE, QUERIES
from tests.plugins.memory.test_postprocess import PASSAGE_NOTES

# The in-memory engine's: on PostgreSQL ``inprocess`` (``auto`` selects ``postgresql`` there).
pytestmark = pytest.mark.usefixtures("in_memory_search")

NOTES = {**PASSAGE_NOTES, **MORE}


def _engine(make_engine: Any, defer_at: int, monkeypatch: pytest.MonkeyPatch) -> Any:
    import goclaw_memory.deferred_sketches as deferred

    monkeypatch.setattr(deferred, "DEFER_AT", defer_at)
    eng = make_engine(plugins={"memory": {"rerank": "overlap"}})
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    for rel, text in NOTES.items():
        write(root, rel, text)
    return eng


def _scored(eng: Any) -> dict[str, list[tuple[str, int, float]]]:
    return {
        q: [(h.path, h.start_line, h.score) for h in eng.memory.search(q, "ada", limit=10)] for q in QUERIES
    }


def _held(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Hold every sketch job until the returned event is set."""
    from goclaw_memory.deferred_sketches import SketchJobs

    go = threading.Event()
    real = SketchJobs._do

    def held(self: Any, job: Any) -> None:
        assert go.wait(30)
        real(self, job)

    monkeypatch.setattr(SketchJobs, "_do", held)
    return go


def _sketched(eng: Any) -> int:
    """How many slots of ada's loaded index have a passage sketch."""
    backend = eng.memory.backend
    st = backend._states[eng.agents.get("ada").id]
    with st.lock:
        return int(st.index.psk.arrays()["psk_has"].sum())


def _reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[tuple[str, int, float]]]:
    """The hits of the notes indexed in another workspace with the sketches made inside
    ``index()`` (as before deferral existed)."""
    import goclaw_memory.deferred_sketches as deferred
    from goclaw.engine import Engine

    monkeypatch.setattr(deferred, "DEFER_AT", 10**9)
    (tmp_path / "ref").mkdir()
    with Engine.open(tmp_path / "ref", plugins={"memory": {"rerank": "overlap"}}) as eng:
        root = Path(eng.agent_dir(eng.agents.create("ada")))
        for rel, text in NOTES.items():
            write(root, rel, text)
        eng.memory.index("ada")
        assert not eng.memory.backend.sketch_jobs.busy() and _sketched(eng) > 0
        return _scored(eng)


def test_a_search_right_after_a_large_run_gives_the_finished_index_hits(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the sketches are pending the index holds every chunk and a search scores the hits'
    passages from their text: the same hits and scores, to the last bit, as once the
    sketches are in, and as an index sketched inside ``index()``."""
    go = _held(monkeypatch)
    eng = _engine(make_engine, 1, monkeypatch)
    eng.memory.index("ada")
    jobs = eng.memory.backend.sketch_jobs
    assert jobs.busy() and _sketched(eng) == 0
    during = _scored(eng)
    go.set()
    assert jobs.wait(30)
    assert _sketched(eng) > 0
    assert _scored(eng) == during
    assert all(during.values())


def test_deferred_sketches_give_the_hits_of_inline_ones(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, backend: str
) -> None:
    eng = _engine(make_engine, 1, monkeypatch)
    eng.memory.index("ada")
    assert eng.memory.backend.sketch_jobs.wait(30)
    deferred = _scored(eng)
    sketched = _sketched(eng)
    eng.memory.backend.invalidate(eng.agents.get("ada").id)
    assert _scored(eng) == deferred  # a reader's rebuild from the table sketches inline
    assert _sketched(eng) == sketched
    if backend == "sqlite":
        assert _reference(tmp_path, monkeypatch) == deferred


def test_the_index_is_saved_once_its_sketches_are_in(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No save without the sketches (a process loading it would never get them); ``close``
    waits for the job; the next process loads the sketches with the index."""
    from goclaw_search.index import SearchIndex

    go = _held(monkeypatch)
    eng = _engine(make_engine, 1, monkeypatch)
    eng.memory.index("ada")
    path = eng.memory.backend._snapshot(eng.agents.get("ada").id)
    assert path is not None and not path.exists()
    expected = _scored(eng)
    closer = threading.Thread(target=eng.close)
    closer.start()
    closer.join(0.3)
    assert closer.is_alive()  # close waits for the job
    go.set()
    closer.join(30)
    assert not closer.is_alive() and path.exists()
    saved = SearchIndex.load(path)
    assert saved.psk.has.any() and saved.n == saved.n_alive
    again = make_engine(plugins={"memory": {"rerank": "overlap"}})
    assert _scored(again) == expected
    assert again.memory.backend.loads == 0  # loaded, not rebuilt from the table


def _changed_during(
    ws: Path, defer_at: int, monkeypatch: pytest.MonkeyPatch, go: threading.Event | None
) -> Any:
    """Index the notes (sketches deferred from ``defer_at`` chunks), then, while a held job is
    pending, change one file and delete another and index again (inline); the hits once done."""
    import goclaw_memory.deferred_sketches as deferred
    from goclaw.engine import Engine

    monkeypatch.setattr(deferred, "DEFER_AT", defer_at)
    ws.mkdir()
    with Engine.open(ws, plugins={"memory": {"rerank": "overlap"}}) as eng:
        root = Path(eng.agent_dir(eng.agents.create("ada")))
        for rel, text in NOTES.items():
            write(root, rel, text)
        eng.memory.index("ada")
        monkeypatch.setattr(deferred, "DEFER_AT", 10**9)
        write(
            root, "memory/c.md", NOTES["memory/c.md"] + "\n## Later\n- Kite Ceramics rotated the key again.\n"
        )
        (root / "memory/d.md").unlink()
        eng.memory.index("ada")
        if go is not None:
            assert eng.memory.backend.sketch_jobs.busy()
            go.set()
        assert eng.memory.backend.sketch_jobs.wait(30)
        st = eng.memory.backend._states[eng.agents.get("ada").id]
        with st.lock:
            idx = st.index
            live = np.flatnonzero(idx.alive[: idx.n] & idx.has_vec[: idx.n])
            assert idx.psk.arrays()["psk_has"][live].all()
        return _scored(eng)


def test_a_change_during_the_job_keeps_every_slot_right(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    """Another index run while the sketches are pending (a file changed, one removed): the job
    installs the sketches of the chunks still there, the new chunks keep theirs; the hits are
    those of the same runs with every sketch made inline."""
    go = _held(monkeypatch)
    deferred = _changed_during(tmp_path / "a", 1, monkeypatch, go)
    assert deferred == _changed_during(tmp_path / "b", 10**9, monkeypatch, None)


def test_a_saved_copy_is_the_index_as_it_was(tmp_path: Path) -> None:
    """deferred_sketches.snapshot: the copy saved while the index changes is the index at the
    moment of the copy."""
    from goclaw_memory.deferred_sketches import snapshot
    from goclaw_search.index import Doc, SearchIndex

    rng = np.random.default_rng(3)
    idx = SearchIndex(8)
    idx.upsert(Doc(i, "", [f"t{i % 7}", f"u{i % 3}"], rng.standard_normal(8), i) for i in range(50))
    before = (idx.bm25(["t3", "u1"]).copy(), idx.cosine(np.ones(8)).copy())
    snap = snapshot(idx)
    idx.remove(range(0, 50, 2))
    idx.upsert(Doc(100 + i, "x", ["new", "t3"], rng.standard_normal(8), i) for i in range(20))
    snap.save(tmp_path / "idx")
    loaded = SearchIndex.load(tmp_path / "idx")
    assert loaded.n == 50 and loaded.n_alive == 50 and "new" not in loaded.vocab
    np.testing.assert_array_equal(loaded.bm25(["t3", "u1"]), before[0])
    np.testing.assert_array_equal(loaded.cosine(np.ones(8)), before[1])


KILLED = textwrap.dedent(
    """
    import os, sys, threading
    from pathlib import Path
    import goclaw_memory.deferred_sketches as deferred
    from goclaw.engine import Engine

    deferred.DEFER_AT = 1
    deferred.SketchJobs._do = lambda self, job: threading.Event().wait()  # never finishes
    eng = Engine.open(Path(sys.argv[1]), plugins={"memory": {"rerank": "overlap"}})
    eng.memory.index("ada")
    print("indexed", flush=True)
    threading.Event().wait()
    """
)


def test_a_process_killed_before_the_background_work_leaves_a_workspace_that_searches_right(
    workspace: Path, make_engine: Any, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    if backend != "sqlite":
        pytest.skip("the killed process opens the workspace's own SQLite database")
    eng = make_engine()
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    for rel, text in NOTES.items():
        write(root, rel, text)
    eng.close()
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", HF_HUB_OFFLINE="1")
    with subprocess.Popen(  # closes its stdout pipe at the end (else an unclosed-file warning)
        [sys.executable, "-c", KILLED, str(workspace)], stdout=subprocess.PIPE, text=True, env=env
    ) as proc:
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "indexed"
        finally:
            proc.kill()
            proc.wait(30)
    after = make_engine(plugins={"memory": {"rerank": "overlap"}})
    path = after.memory.backend._snapshot(after.agents.get("ada").id)
    assert path is not None and not path.exists()  # never saved without its sketches
    with after.db.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
    got = _scored(after)
    assert after.memory.backend.loads == 1  # rebuilt from the table (and sketched)
    assert after.memory.index("ada").rechunked == 0  # the killed run's writes were complete
    assert got == _reference(workspace.parent, monkeypatch)


def test_the_job_outlives_a_daemon_thread_that_indexed(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A watcher's (daemon) thread that runs an index leaves a job the interpreter waits for at
    exit (not a daemon): its save is not lost when the program ends without ``close``."""
    go = _held(monkeypatch)
    eng = _engine(make_engine, 1, monkeypatch)
    runner = threading.Thread(target=eng.memory.index, args=("ada",), daemon=True)
    runner.start()
    runner.join(30)
    jobs = eng.memory.backend.sketch_jobs
    assert jobs.busy() and jobs._thread is not None and not jobs._thread.daemon
    go.set()
    assert jobs.wait(30)
