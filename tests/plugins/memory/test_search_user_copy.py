"""A user's copy of an agent memory file wins only where it holds the same text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.memory_helpers import write


@pytest.fixture
def backend() -> str:
    """De-duplication happens in the memory service, the same on every backend."""
    return "sqlite"


@pytest.mark.parametrize("channel", ["hybrid", "lexical", "vector"])
def test_a_user_copy_with_other_text_does_not_hide_the_agent_chunk(make_engine: Any, channel: str) -> None:
    eng = make_engine()
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    write(root, "MEMORY.md", "The Kestrel gateway certificate renews on the first of March.\n")
    write(root, "users/alice/MEMORY.md", "Alice renews her passport every ten years.\n")
    eng.memory.index("ada")
    q = "Kestrel gateway certificate renewal"
    hits = eng.memory.search(q, "ada", "alice", channel=channel)
    assert ("MEMORY.md", "agent") in [(h.path, h.scope) for h in hits], channel
    assert hits[0].path == "MEMORY.md", channel


def test_a_user_copy_with_the_same_text_still_wins(make_engine: Any) -> None:
    eng = make_engine()
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    same = "Standup is at nine thirty in the blue room.\n"
    write(root, "MEMORY.md", same)
    write(root, "users/alice/MEMORY.md", same)
    eng.memory.index("ada")
    hits = eng.memory.search("standup blue room", "ada", "alice")
    assert [(h.path, h.scope) for h in hits] == [("users/alice/MEMORY.md", "user")]
