"""Test helpers shared by the test modules."""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def run_cli(
    args: list[str],
    *,
    workspace: Path | None = None,
    database_url: str | None = None,
    stdin: str | bytes | None = None,
) -> CliResult:
    """Run the real CLI entry point (``goclaw.cli.main``) in-process and capture its output."""
    from goclaw.cli import main

    full: list[str] = []
    if workspace is not None:
        full += ["--workspace", str(workspace)]
    if database_url is not None:
        full += ["--database-url", database_url]
    full += args
    out, err = io.StringIO(), io.StringIO()
    data = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
    fake_in = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    old = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = fake_in, out, err
    code = 0
    try:
        main(full)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdin, sys.stdout, sys.stderr = old
    return CliResult(code, out.getvalue(), err.getvalue())


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
