"""A saved search index is verified on load, never trusted: every file's checksum and the
scope numbers. Mutations of the saved files (two users' scope numbers swapped in meta.json,
truncated or flipped bytes, a file missing) give the results of a fresh index built from the
table, never another user's memory; the damaged index is deleted (not read again) and
``goclaw memory doctor`` reports it while it is there."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from goclaw_memory.doctor import run_doctor
from tests.memory_helpers import write

QUERIES = [
    ("harbour ferry noon", "ann"),
    ("harbour ferry noon", "ben"),
    ("vault code", "ann"),
    ("office", None),
]


@pytest.fixture
def backend() -> str:
    return "sqlite"


def _results(eng: Any) -> list[list[tuple[str, int, float]]]:
    """Every query's hits from the index loaded anew (the in-memory copy dropped)."""
    eng.memory.backend._states.clear()
    return [
        [(h.path, h.start_line, round(h.score, 5)) for h in eng.memory.search(q, "ada", user)]
        for q, user in QUERIES
    ]


def _own(results: list[list[tuple[str, int, float]]]) -> bool:
    """No hit of another user's folder in any query's results."""
    for (_q, user), hits in zip(QUERIES, results, strict=True):
        for path, _line, _score in hits:
            if path.startswith("users/") and not path.startswith(f"users/{user}/"):
                return False
    return True


def _swap_scopes(folder: Path) -> None:
    meta = json.loads((folder / "meta.json").read_text())
    scopes = meta["scopes"]
    scopes["ann"], scopes["ben"] = scopes["ben"], scopes["ann"]
    (folder / "meta.json").write_text(json.dumps(meta))


def _mutations(pristine: Path, rng: random.Random) -> list[tuple[str, Callable[[Path], None]]]:
    found: list[tuple[str, Callable[[Path], None]]] = [("swap scope numbers", _swap_scopes)]
    for file in sorted(p.name for p in pristine.iterdir()):
        size = (pristine / file).stat().st_size

        def truncate(folder: Path, file: str = file, size: int = size) -> None:
            with open(folder / file, "r+b") as fh:
                fh.truncate(size // 2)

        def flip(folder: Path, file: str = file, at: int = rng.randrange(max(size, 1))) -> None:
            data = bytearray((folder / file).read_bytes())
            if data:
                data[at] ^= 0x5A
            (folder / file).write_bytes(bytes(data))

        def remove(folder: Path, file: str = file) -> None:
            (folder / file).unlink()

        found += [(f"truncate {file}", truncate), (f"flip {file}", flip), (f"remove {file}", remove)]
    found.append(("a stray file", lambda folder: (folder / "extra.npy").write_bytes(b"x")))
    return found


def test_mutated_saved_index_gives_a_fresh_indexs_results(make_engine: Any) -> None:
    eng = make_engine()
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    write(root, "MEMORY.md", "The office is on the third floor.\n")
    write(root, "users/ann/memory/notes.md", "Ann's harbour ferry leaves at noon. Her vault code is 1111.\n")
    write(root, "users/ben/memory/notes.md", "Ben's harbour ferry leaves at noon. His vault code is 2222.\n")
    eng.memory.index("ada")
    backend = eng.memory.backend
    aid = eng.agents.get("ada").id
    path = backend._snapshot(aid)
    fresh = _results(eng)  # no saved index yet: built from the table
    assert all(fresh) and _own(fresh)
    assert backend.save(aid) == path
    assert _results(eng) == fresh  # the intact saved index loads and ranks the same
    pristine = path.with_name("pristine")
    shutil.copytree(path, pristine)
    for name, mutate in _mutations(pristine, random.Random(7)):
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(pristine, path)
        mutate(path)
        got = _results(eng)
        assert got == fresh, name
        assert _own(got), name
        assert not path.exists(), name  # refused and deleted: no later process reads it


def test_doctor_reports_a_damaged_saved_index(make_engine: Any) -> None:
    eng = make_engine()
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    write(root, "users/ann/memory/notes.md", "Ann's harbour ferry leaves at noon.\n")
    write(root, "users/ben/memory/notes.md", "Ben's harbour ferry leaves at noon.\n")
    eng.memory.index("ada")
    aid = eng.agents.get("ada").id
    assert eng.memory.search("harbour ferry", "ada", "ann")
    path = eng.memory.backend.save(aid)
    checks = [c for c in run_doctor(eng, "ada").checks if c.name == "saved-index"]
    assert [c.status for c in checks] == ["ok"], checks
    _swap_scopes(path)
    checks = [c for c in run_doctor(eng, "ada").checks if c.name == "saved-index"]
    assert [c.status for c in checks] == ["problem"] and "damaged or was edited" in checks[0].message
