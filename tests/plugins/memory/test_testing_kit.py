"""The test kit goclaw ships for plugin authors (``goclaw_memory.testing``) works in a project
that is not goclaw's repository: its conftest loads the shipped fixtures, its module imports the
backend suite and names the backend, and pytest runs the suite there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROJECT = {
    "conftest.py": 'pytest_plugins = ["goclaw_memory.testing.fixtures"]\n',
    "test_my_backend.py": (
        "import pytest\n\n"
        "from goclaw_memory.testing.backend_suite import *  # noqa: F403\n\n\n"
        "@pytest.fixture\n"
        "def search_backend() -> str:\n"
        '    return "sqlite"\n'
    ),
}


def test_the_backend_suite_runs_outside_the_repository(tmp_path: Path) -> None:
    project = tmp_path / "my-backend"
    project.mkdir()
    for name, text in PROJECT.items():
        (project / name).write_text(text, encoding="utf-8")
    chosen = "sqlite and (lexical_only_hit or scope_isolation_between_users or cli_index_search_get)"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", chosen, str(project)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "3 passed" in result.stdout and "tests." not in result.stdout
