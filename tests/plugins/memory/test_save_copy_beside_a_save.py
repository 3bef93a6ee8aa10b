"""A sketch job's save (goclaw_memory.deferred_sketches.save_copy) moves the saved index aside
and deletes it after releasing the state's lock; a plain save of the same index that ran right
then (under the lock) moved the new saved index to the same ``<name>.<pid>.old`` folder, which
still held the files being deleted: the rename failed, the save was lost, and every save of the
backend was off for RETRY_SAVE seconds with a warning. Each save_copy now has its own folder."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from goclaw_memory.deferred_sketches import save_copy
from tests.memory_helpers import saved_index


@pytest.fixture
def backend() -> str:
    return "sqlite"


def test_a_save_while_a_sketch_job_deletes_the_previous_copy_is_written(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng = make_engine()
    backend, aid, path = saved_index(eng)
    st = backend._states[aid]
    real = shutil.rmtree
    saved: list[Path | None] = []
    raced: list[bool] = []

    def rmtree(target: Any, *args: Any, **kwargs: Any) -> Any:
        if not raced and str(target).endswith(".old"):  # save_copy, its lock released
            raced.append(True)
            saved.append(backend.save(aid))  # an index run's save lands right then
        return real(target, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", rmtree)
    assert save_copy(backend, aid, st) == path
    assert saved == [path]
    assert not backend._unsaveable and path.exists()
    assert not list(path.parent.glob("*.old"))
