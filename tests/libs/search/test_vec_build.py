"""The compiled vector kernels are optional: a wheel built where no C compiler works still
builds, without the module (goclaw_search.vecq then runs its numpy versions, which
test_vec_kernels.py runs too, GOCLAW_SEARCH_NUMPY=1)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers import source_copy


@pytest.mark.slow
def test_a_wheel_builds_without_a_c_compiler(tmp_path: Path) -> None:
    src = source_copy(tmp_path / "src")  # no build folder or module left by another build
    env = dict(os.environ, CC="/bin/false", CXX="/bin/false", LDSHARED="/bin/false")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(src)],
        check=True,
        capture_output=True,
        env=env,
    )
    [wheel] = tmp_path.glob("goclaw-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "goclaw_search/vecq.py" in names and "goclaw_search/_vec.pyx" not in names
    assert not [n for n in names if n.startswith("goclaw_search/_vec") and not n.endswith(".pyx")]
