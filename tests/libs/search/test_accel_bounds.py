"""The C accelerator's module functions refuse a size they cannot allocate instead of writing
past their buffer (libs/goclaw_search/_accel.c): each call runs in a child process, so a crash
fails the test instead of the test run."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("goclaw_search._accel")


@pytest.mark.parametrize("count", ["-1", "2**61", "2**62 + 3"])
def test_term_ids_refuses_a_count_it_cannot_hold(count: str) -> None:
    code = (
        "from goclaw_search import _accel\n"
        "try:\n"
        f"    _accel.term_ids({{}}, [['a'] * 1000], {count})\n"
        "except ValueError as exc:\n"
        "    print('refused', exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]
    assert "refused" in done.stdout


@pytest.mark.parametrize("use", ["t.batch(['a b'])", "t.terms_of('a b')", "t.terms", "t.ids"])
def test_an_uninitialised_term_table_refuses_use(use: str) -> None:
    """A TermTable made by ``__new__`` alone has no terms list or ids dict: every use says so."""
    code = (
        "from goclaw_search import _accel\n"
        "t = _accel.TermTable.__new__(_accel.TermTable)\n"
        "try:\n"
        f"    {use}\n"
        "except RuntimeError as exc:\n"
        "    print('refused', exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]
    assert "refused TermTable: not initialised" in done.stdout
