"""The Memory Context's budget is counted in tokens (the engine's tokenizer), and the recent
user turns give the recall context with the memory service on too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from goclaw.contracts.hooks import PromptRequest
from goclaw.contracts.host import PromptContext
from goclaw_episodic.autoinject import MemoryContextSection
from tests.memory_helpers import write
from tests.plugins.episodic.test_autoinject import ConceptPlugin


@pytest.fixture
def backend() -> str:
    return "sqlite"


@pytest.fixture
def eng(make_engine: Any) -> Any:
    e = make_engine(
        extra_plugins=[("concepts", ConceptPlugin())], plugins={"embeddings": {"provider": "concepts"}}
    )
    e.agents.create("ada")
    return e


def _render(eng: Any, message: str, session_key: str | None = None) -> str | None:
    request = PromptRequest(agent="ada", message=message, session_key=session_key)
    ctx = PromptContext(engine=eng, request=request, agent=eng.agents.get("ada"), user="", mode="full")
    return MemoryContextSection().render(ctx)


def test_the_budget_is_held_in_tokens(eng: Any) -> None:
    codes = " ".join(f"{i:04x}-{i * 7919 % 65536:04x}-{i * 104729 % 65536:04x}" for i in range(1, 40))
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    write(
        root, "memory/2026-11-03.md", f"# Billing\n\nAcme invoice INV-20931 was sent twice; refs {codes}.\n"
    )
    eng.memory.index("ada")
    for budget in (60, 80, 200):
        eng.plugin_settings("episodic").auto_inject_max_tokens = budget
        section = _render(eng, "Which Acme invoice was sent twice?")
        assert section is not None and "INV-20931" in section
        assert eng.tokenizer.count(section) <= budget  # 4 characters a token would give ~1.7x
    eng.plugin_settings("episodic").auto_inject_max_tokens = 20  # not even the header fits
    assert _render(eng, "Which Acme invoice was sent twice?") is None


def test_recent_user_turns_give_the_context_with_the_memory_service_on(eng: Any) -> None:
    from goclaw.contracts.memory import NewEpisode
    from goclaw_episodic.store import EpisodicStore

    assert eng.has_service("memory")
    store = EpisodicStore(eng)
    row = store.build(
        NewEpisode(
            agent_id=eng.agents.get("ada").id,
            user_id="",
            session_key="old",
            source_id="old:0",
            summary="The parcel arrived damaged.",
        )
    )
    assert store.insert(row) is not None
    message = "any news about the refund for my order?"  # nothing of the summary's meaning
    assert _render(eng, message) is None
    eng.sessions.append("ada", "agent:ada:main", "user", "my package came broken yesterday")
    eng.sessions.append("ada", "agent:ada:main", "user", message)
    section = _render(eng, message, session_key="agent:ada:main")
    assert section is not None and f"(memory_expand id: {row.id})" in section
