"""Without the mcp extra, ``goclaw mcp`` names the extra to install on one line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers import run_cli


def test_mcp_without_the_extra_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` now raises ImportError
    result = run_cli(["mcp", "--agent", "ada"], workspace=tmp_path)
    assert result.code != 0
    assert result.err.strip().splitlines() == [
        "error: goclaw mcp needs the mcp extra (mcp is missing): pip install 'goclaw[mcp]'"
    ]
    assert not (tmp_path / ".goclaw").exists()  # refused before the engine opens
