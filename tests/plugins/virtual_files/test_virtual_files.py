"""The virtual context files: DELEGATION.md, TEAM.md and AVAILABILITY.md agree."""

from __future__ import annotations

from typing import Any


def _block(prompt: str, name: str) -> str:
    return prompt.split(f'<system_context name="{name}">')[1].split("</system_context>")[0]


def _boss_with_links(engine: Any, n: int) -> None:
    engine.agents.create("boss", "open")
    engine.files.set("boss", "AGENTS.md", "rules", user="u")
    for i in range(n):
        engine.agents.create(f"w{i:02d}", "open", description=f"worker number {i}")
        engine.agents.link("boss", f"w{i:02d}", f"task kind {i}")


def test_availability_never_points_at_a_list_delegation_does_not_show(engine: Any) -> None:
    # With 16 links (> 15: DELEGATION.md is description-only) AVAILABILITY.md must not say
    # "delegate only to the agents in DELEGATION.md", which lists none.
    _boss_with_links(engine, 16)
    prompt = engine.prompt.build_for("boss", "u").prompt
    delegation, availability = _block(prompt, "DELEGATION.md"), _block(prompt, "AVAILABILITY.md")
    assert "w00" not in delegation and "16 specialist agents" in delegation
    assert "agents in DELEGATION.md" not in availability
    assert "your 16 linked specialist agents, in the way DELEGATION.md describes" in availability


def test_availability_with_an_inline_list_and_with_no_links(engine: Any) -> None:
    _boss_with_links(engine, 15)
    prompt = engine.prompt.build_for("boss", "u").prompt
    assert "**w14**" in _block(prompt, "DELEGATION.md")
    assert "delegate only to the agents in DELEGATION.md" in _block(prompt, "AVAILABILITY.md")
    engine.agents.create("solo", "open")
    engine.files.set("solo", "AGENTS.md", "rules", user="u")
    prompt = engine.prompt.build_for("solo", "u").prompt
    assert "DELEGATION.md" not in prompt
    assert "NO delegation targets" in _block(prompt, "AVAILABILITY.md")


def test_availability_follows_the_configured_inline_limit(make_engine: Any) -> None:
    engine = make_engine(plugins={"virtual_files": {"delegation_inline_max": 2}})
    _boss_with_links(engine, 3)
    prompt = engine.prompt.build_for("boss", "u").prompt
    assert "3 specialist agents" in _block(prompt, "DELEGATION.md")
    assert "your 3 linked specialist agents" in _block(prompt, "AVAILABILITY.md")
