"""Test helpers shared by the test modules."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from goclaw_memory.testing.helpers import CliResult, run_cli  # noqa: F401 - shared with plugin authors


def source_copy(dest: Path) -> Path:
    """A copy of what the package is built from (setup.py, pyproject.toml and the package
    folders), without a build folder, compiled module or cache: builds and editable installs
    of it never write into the checkout, whose compiled module other test processes have
    loaded."""
    import shutil

    root = Path(__file__).resolve().parent.parent
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "build", "*.egg-info")
    for name in ("goclaw", "libs", "plugins", "templates"):
        shutil.copytree(root / name, dest / name, ignore=ignore)
    for name in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md"):
        shutil.copy(root / name, dest / name)
    return dest


def load_script(path: Path, name: str | None = None) -> ModuleType:
    """A script outside the packages (``benchmarks/``, ``examples/``) imported as the module
    ``name`` (its file's stem by default), registered in ``sys.modules`` so its dataclasses and
    the modules it imports by that name resolve."""
    name = name or path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
