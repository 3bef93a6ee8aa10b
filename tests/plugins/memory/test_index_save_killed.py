"""``kill -9`` during the background save of a large index run: the next process loads the
previous saved index (or none), catches up from the table and ranks exactly as a fresh index
built from the table; what the killed save left beside the index (its temporary, staging or
moved-aside folders, named with its process id) is deleted by the next process's first load.
Real subprocesses, really SIGKILLed while their save is held at the named point."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.surfaces_helpers import server_env

# The child: index run "first" (files 0..159) or "second" (a search, which loads the saved index,
# then files 160..319 and edits of 0..39), with the large-run thresholds lowered (a background
# save from 40 chunks, not 2,000), its save held at ``hold`` ("arrays": writing the arrays into
# its temporary folder; "swap": between the renames that put the staging copy in place) once "held"
# is written, for the parent to kill.
CHILD = r"""
import os, sys, time
from pathlib import Path
import goclaw_memory.deferred_sketches as D, goclaw_memory.sqlite_backend as S, goclaw_search.persist as P
D.DEFER_AT = S.SAVE_DELTA = 40
ws, step, hold = Path(sys.argv[1]), sys.argv[2], sys.argv[3]

def held():
    (ws / "held").write_text(str(os.getpid()))
    time.sleep(300)

if hold == "arrays":
    real_save = P.np.save
    P.np.save = lambda file, arr: held() if str(file).endswith("tf.npy") else real_save(file, arr)
elif hold == "swap":
    real = os.replace
    os.replace = lambda src, dst: held() if str(src).endswith(".staging") else real(src, dst)
from goclaw.engine import Engine
eng = Engine.open(ws)
if step == "first":
    eng.agents.create("ada")
else:  # a long-running process: its index is loaded, the run patches it and saves it in the background
    assert eng.memory.search("harbour ferry", "ada", "ann")
root = eng.agent_dir(eng.agents.get("ada"))
words = "harbour ferry vault ledger orchard beacon copper meadow lantern quarry".split()
span = range(0, 160) if step == "first" else range(160, 320)
for i in list(span) + ([] if step == "first" else list(range(40))):
    user = "ann" if i % 2 else "ben"
    rel = f"users/{user}/memory/n{i}.md"
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    extra = " revised" if step == "second" and i < 160 else ""
    path.write_text(f"Note {i}{extra}: the {words[i % 10]} and the {words[(i * 3) % 10]} of {user}.\n")
eng.memory.index("ada")
eng.close()
print("done")
"""

QUERIES = [
    ("harbour ferry", "ann"),
    ("vault ledger", "ben"),
    ("copper meadow revised", "ann"),
    ("quarry", None),
]


def _child(ws: Path, home: Path, step: str, hold: str) -> None:
    held = ws / "held"
    held.unlink(missing_ok=True)
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(ws), step, hold],
        env=server_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        if hold == "none":
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0 and "done" in out, err
            return
        deadline = time.monotonic() + 300
        while not held.exists():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the save was never reached"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _ranked(eng: object) -> list[list[tuple[str, int, float]]]:
    return [
        [(h.path, h.start_line, round(h.score, 5)) for h in eng.memory.search(q, "ada", u)]  # type: ignore[attr-defined]
        for q, u in QUERIES
    ]


@pytest.mark.parametrize("hold", ["arrays", "swap"])
def test_kill_9_during_the_background_save(workspace: Path, home: Path, hold: str) -> None:
    from goclaw.engine import Engine

    _child(workspace, home, "first", "none")
    _child(workspace, home, "second", hold)
    folder = workspace / ".goclaw" / "goclaw.db.index"
    with Engine.open(workspace) as eng:
        aid = eng.agents.get("ada").id
        index = eng.memory.backend._snapshot(aid)
        assert index is not None and index.parent == folder
        left = sorted(p.name for p in folder.iterdir() if p.name != index.name)
        assert left, "the killed save left nothing behind: the kill came too late"
        loaded = _ranked(eng)
        assert sorted(p.name for p in folder.iterdir() if p.name != index.name) == []
        eng.memory.backend._states.clear()
        shutil.rmtree(index, ignore_errors=True)
        fresh = _ranked(eng)  # built from the table alone
        assert all(fresh[:3]) and loaded == fresh
        assert eng.memory.backend.save(aid) is not None
    with Engine.open(workspace) as eng:  # a later process: the same ranking
        assert _ranked(eng) == fresh
