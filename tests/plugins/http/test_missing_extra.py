"""Without the http extra, ``goclaw serve`` names the extra to install on one line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers import run_cli


@pytest.mark.parametrize("missing", ["fastapi", "uvicorn"])
def test_serve_without_the_extra_says_what_to_install(
    missing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, missing, None)  # `import <missing>` now raises ImportError
    result = run_cli(["serve", "--no-auth"], workspace=tmp_path)
    assert result.code != 0
    assert result.err.strip().splitlines() == [
        f"error: goclaw serve needs the http extra ({missing} is missing): pip install 'goclaw[http]'"
    ]
    assert not (tmp_path / ".goclaw").exists()  # refused before the engine opens
