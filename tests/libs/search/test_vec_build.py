"""The compiled vector kernels are optional: a wheel built where no C compiler works still
builds, without the module (goclaw_search.vecq then runs its numpy versions, which
test_vec_kernels.py runs too, GOCLAW_SEARCH_NUMPY=1)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_a_wheel_builds_without_a_c_compiler(tmp_path: Path) -> None:
    src = tmp_path / "src"  # a copy: no build folder or module left by another build
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "build", "*.egg-info")
    for name in ("goclaw", "libs", "plugins", "templates"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    for name in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md"):
        shutil.copy(ROOT / name, src / name)
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
