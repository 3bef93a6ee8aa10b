"""Install the example third-party plugins under ``tests/third_party/`` for real, with pip.

``pip install --target`` puts a real ``*.dist-info`` (with ``entry_points.txt``) in a folder;
adding that folder to ``sys.path`` is exactly how an installed plugin becomes visible to
``importlib.metadata`` and so to goclaw's entry-point loading.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PLUGINS_DIR = Path(__file__).parent / "third_party"
TEST_PLUGIN_MODULES = (
    "goclaw_hello",
    "goclaw_broken",
    "goclaw_listener",
    "goclaw_roster",
    "goclaw_minisearch",
    "goclaw_reverie",
)


def pip_install_target(project: str, target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "--target",
            str(target),
            str(PLUGINS_DIR / project),
        ],
        check=True,
        capture_output=True,
    )
    return target


@contextmanager
def on_sys_path(folder: Path) -> Iterator[None]:
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    try:
        yield
    finally:
        sys.path.remove(str(folder))
        for name in [m for m in sys.modules if m.startswith(TEST_PLUGIN_MODULES)]:
            del sys.modules[name]
        importlib.invalidate_caches()
