"""A forget while a sketch job writes its copy of the index (goclaw_memory.deferred_sketches
.save_copy, outside the state's lock) deletes the folder being written: the write failed, and
save_copy took that for a failing disk, turning every save of the backend off for RETRY_SAVE
seconds with a warning. Only that save is dropped now (the forget dropped its state anyway);
later saves are written."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goclaw_memory.deferred_sketches import save_copy
from tests.memory_helpers import saved_index


@pytest.fixture
def backend() -> str:
    return "sqlite"


@pytest.mark.parametrize("everything", [True, False])
def test_a_forget_during_a_background_save_drops_only_that_save(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch, everything: bool
) -> None:
    eng = make_engine()
    backend, aid, path = saved_index(eng)
    st = backend._states[aid]
    writing, forgotten = threading.Event(), threading.Event()
    real = np.save
    main = threading.current_thread()

    def save(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is not main and not writing.is_set():
            writing.set()  # the copy's first array: the forget lands now
            assert forgotten.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(np, "save", save)
    got: list[Path | None] = []
    job = threading.Thread(target=lambda: got.append(save_copy(backend, aid, st)))
    job.start()
    assert writing.wait(30)
    backend.invalidate(None if everything else aid)
    forgotten.set()
    job.join(30)
    assert got == [None] and not backend._unsaveable
    assert not path.exists()  # the forgotten index is not written back
    monkeypatch.setattr(np, "save", real)
    assert eng.memory.search("harbour ferry", "ada")  # rebuilt from the table
    assert backend.save(aid) == path and path.exists()  # and saved
