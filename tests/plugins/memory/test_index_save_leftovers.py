"""A saved index is replaced by two renames: the previous one moved aside to ``<name>...old``,
then the new one into place. When the second rename failed, the folder moved aside stayed (it
was deleted only after success), holding the agent's terms: a forget deleted ``<name>`` only,
so it outlived the forget (and a later save of the same process failed to rename onto it). It
is now deleted whatever happens, and a forget also deletes what a process killed between the
renames left beside the index; such a folder is never loaded as the index."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goclaw_memory.deferred_sketches import save_copy
from goclaw_search.index import Doc, SearchIndex
from tests.memory_helpers import saved_index


def _failing_rename(monkeypatch: pytest.MonkeyPatch, suffix: str) -> list[str]:
    """``os.replace`` failing when it moves a folder named ``*suffix`` into place."""
    real = os.replace
    failed: list[str] = []

    def replace(src: Any, dst: Any) -> None:
        if str(src).endswith(suffix):
            failed.append(str(src))
            raise OSError("injected: rename failed")
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    return failed


def test_a_failed_second_rename_of_save_index_leaves_no_old_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    idx = SearchIndex(4)
    idx.upsert([Doc(i, "", ["kestrel", f"t{i}"], np.ones(4), i) for i in range(10)])
    path = tmp_path / "a.idx"
    idx.save(path)
    failed = _failing_rename(monkeypatch, ".tmp")
    with pytest.raises(OSError, match="injected"):
        idx.save(path)
    assert failed and list(tmp_path.iterdir()) == []  # no index (a rebuild), nothing aside
    monkeypatch.undo()
    idx.save(path)
    assert SearchIndex.load(path).n_alive == 10 and [p.name for p in tmp_path.iterdir()] == ["a.idx"]


@pytest.fixture
def backend() -> str:
    return "sqlite"


def _engine(make_engine: Any) -> tuple[Any, Any, str, Path]:
    eng = make_engine()
    saved_index(eng, "bob")
    backend, aid, path = saved_index(eng, "ada")
    return eng, backend, aid, path


def test_a_failed_second_rename_of_a_sketch_jobs_save_leaves_no_old_folder(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng, backend, aid, path = _engine(make_engine)
    failed = _failing_rename(monkeypatch, ".staging")
    assert save_copy(backend, aid, backend._states[aid]) is None
    bob = backend._snapshot(eng.agents.get("bob").id)
    assert failed and [p.name for p in path.parent.iterdir()] == [bob.name]  # nothing of ada's


def test_a_forget_deletes_what_an_interrupted_save_left_and_it_is_never_loaded(make_engine: Any) -> None:
    eng, backend, aid, path = _engine(make_engine)
    bob = backend._snapshot(eng.agents.get("bob").id)
    # a process killed between the renames of save_index, then one in save_copy's write
    shutil.copytree(path, path.with_name(path.name + ".4242.old"))
    shutil.copytree(path, path.with_name(path.name + ".4242.77.staging"))
    shutil.move(path, path.with_name(path.name + ".4243.old"))
    backend._states.clear()  # a new process: no saved index, the leftovers are not loaded
    loads = backend.loads
    assert eng.memory.search("harbour ferry", "ada") and backend.loads == loads + 1  # rebuilt
    backend.invalidate(aid)
    assert [p.name for p in path.parent.iterdir()] == [bob.name]  # bob's index untouched
    assert SearchIndex.load(bob).n_alive


def test_stale_leftovers_of_killed_saves_go_at_the_next_save_and_live_ones_stay(make_engine: Any) -> None:
    """What a killed save left beside an index (the previous index moved aside, a temporary or
    staging folder) stayed on disk until the agent was forgotten. A save now deletes, from the
    whole folder, the leftovers older than an hour: never one a live save (here or in another
    process of the workspace) is writing; the index itself and other files stay."""
    import time

    from goclaw_memory.snapshot_files import STALE

    eng, backend, aid, path = _engine(make_engine)
    bob = backend._snapshot(eng.agents.get("bob").id)
    assert bob is not None
    folder = path.parent
    stale = [
        *(
            path.name + suffix
            for suffix in (".4242.old", ".k3x9a_q1.tmp", ".4242.77.staging", ".4242.77.copy.old")
        ),
        bob.name + ".4244.old",
        bob.name + ".4244.91.staging.abc123de.tmp",  # save_index's own folder inside a sketch save
    ]
    then = time.time() - STALE - 60
    for name in stale:
        shutil.copytree(path, folder / name)
        os.utime(folder / name, (then, then))
    # another (live) process's save under way: just written
    live = f"{path.name}.{os.getppid()}.12.staging"
    shutil.copytree(path, folder / live)
    (folder / "notes.txt").write_text("not a leftover\n", encoding="utf-8")
    os.utime(folder / "notes.txt", (then, then))
    eng.close()
    later = make_engine()  # a new process: its first save clears the folder
    assert later.memory.search("harbour ferry", "ada")
    assert later.memory.backend.save(aid) == path
    assert sorted(p.name for p in folder.iterdir()) == sorted([path.name, bob.name, live, "notes.txt"])
    later.close()
    shutil.rmtree(folder / live)
    again = make_engine()  # the saved indexes load as they are
    assert again.memory.search("harbour ferry", "ada") and again.memory.search("harbour ferry", "bob")
    assert again.memory.backend.loads == 0
