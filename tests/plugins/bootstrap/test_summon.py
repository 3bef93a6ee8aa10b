"""Agent summoning: one LLM call through litellm (mocked offline), tagged XML parsed
into the persona files, fallbacks to templates, status summoning -> active."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from goclaw_bootstrap.summoner import parse_summon_output

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"
GOOD = """Here you go:
<soul># SOUL.md - Who You Are
You are a sarcastic Rust reviewer.</soul>
<identity># IDENTITY.md - Who Am I?
- **Name:** Ferris
- **Emoji:** 🦀</identity>
<agents>
```markdown
# AGENTS.md - Operating Rules
Review every unsafe block.
```
</agents>
<tools># TOOLS.md - Local Notes
cargo clippy lives here.</tools>
<user_predefined># USER_PREDEFINED.md
Audience: Rust developers.</user_predefined>"""
LLM = {"llm": {"model": "gpt-4o-mini", "max_retries": 0}}


def tpl(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")


def test_parser_handles_fences_missing_and_unclosed_tags() -> None:
    files = parse_summon_output(GOOD)
    assert files["AGENTS.md"] == "# AGENTS.md - Operating Rules\nReview every unsafe block.\n"
    assert files["IDENTITY.md"].startswith("# IDENTITY.md") and "Ferris" in files["IDENTITY.md"]
    assert set(files) == {"SOUL.md", "IDENTITY.md", "AGENTS.md", "TOOLS.md", "USER_PREDEFINED.md"}
    partial = parse_summon_output("<soul>a soul</soul><identity>cut off mid-way")
    assert partial == {"SOUL.md": "a soul\n"}
    assert parse_summon_output("no tags at all") == {}
    assert parse_summon_output("<soul>   </soul>") == {}


def statuses(engine: Any, name: str) -> str:
    return str(engine.agents.get(name).status)


def test_good_xml_writes_all_files_and_goes_active(make_engine: Any) -> None:
    eng = make_engine(plugins=LLM)
    result = eng.service("summoner").summon("ferris", "sarcastic Rust reviewer", mock_response=GOOD)
    assert result["status"] == "active" and result["fallback"] is False
    assert result["files"] == {
        "SOUL.md": "generated",
        "IDENTITY.md": "generated",
        "AGENTS.md": "generated",
        "TOOLS.md": "generated",
        "USER_PREDEFINED.md": "generated",
    }
    assert statuses(eng, "ferris") == "active"
    assert eng.agents.get("ferris").agent_type == "predefined"
    assert (
        eng.files.get("ferris", "SOUL.md") == "# SOUL.md - Who You Are\nYou are a sarcastic Rust reviewer.\n"
    )
    assert eng.files.get("ferris", "TOOLS.md") == "# TOOLS.md - Local Notes\ncargo clippy lives here.\n"
    prompt = eng.prompt.build_for("ferris", "dev").prompt
    assert "sarcastic Rust reviewer" in prompt and "Ferris" in prompt


def test_malformed_xml_falls_back_to_templates(make_engine: Any) -> None:
    eng = make_engine(plugins=LLM)
    result = eng.service("summoner").summon("x", "a helpful cat", mock_response="<<<not xml at all>>>")
    assert result["fallback"] is True and result["status"] == "active"
    assert "no usable tagged blocks" in result["reason"]
    assert statuses(eng, "x") == "active"
    for name in ("SOUL.md", "IDENTITY.md", "AGENTS.md"):
        assert eng.files.get("x", name) == tpl(name)  # seeded at creation, kept
    assert eng.files.get("x", "TOOLS.md") == tpl("TOOLS.md")
    assert result["files"]["TOOLS.md"] == "template"
    assert "fallback" in result["message"]


def test_partial_xml_keeps_what_parsed_and_falls_back_for_the_rest(make_engine: Any) -> None:
    eng = make_engine(plugins=LLM)
    partial = "<soul>Only a soul.</soul><identity>- **Name:** Half"
    result = eng.service("summoner").summon("half", "half-finished", mock_response=partial)
    assert result["fallback"] is True
    assert result["files"]["SOUL.md"] == "generated"
    assert result["files"]["IDENTITY.md"] == "kept"
    assert "IDENTITY.md" in result["reason"] and "AGENTS.md" in result["reason"]
    assert eng.files.get("half", "SOUL.md") == "Only a soul.\n"
    assert eng.files.get("half", "IDENTITY.md") == tpl("IDENTITY.md")
    assert statuses(eng, "half") == "active"


def test_timeout_falls_back_and_existing_content_is_never_lost(make_engine: Any) -> None:
    import litellm

    eng = make_engine(plugins=LLM)
    eng.agents.create("slow", "predefined")
    eng.files.set("slow", "SOUL.md", "hand-written soul")
    timeout = litellm.Timeout(message="took too long", model="gpt-4o-mini", llm_provider="openai")
    result = eng.service("summoner").summon("slow", "anything", mock_response=timeout)
    assert result["fallback"] is True and "LLM call failed" in result["reason"]
    assert result["files"]["SOUL.md"] == "kept"
    assert eng.files.get("slow", "SOUL.md") == "hand-written soul"
    assert statuses(eng, "slow") == "active"


def test_status_is_summoning_during_the_call(make_engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    eng = make_engine(plugins=LLM)
    seen: list[str] = []
    llm = eng.llm()
    assert llm is not None

    def fake_complete(messages: Any, **kw: Any) -> str:
        seen.append(statuses(eng, "obs"))
        assert "<soul>" in messages[0]["content"] and "a watcher" in messages[1]["content"]
        return GOOD

    monkeypatch.setattr(llm, "complete", fake_complete)
    assert eng.service("summoner").summon("obs", "a watcher")["fallback"] is False
    assert seen == ["summoning"]
    assert statuses(eng, "obs") == "active"


def test_no_model_configured_falls_back_and_the_cli_says_so(workspace: Path, database_url: Any) -> None:
    from tests.helpers import run_cli

    res = run_cli(
        ["agent", "summon", "plain", "a plain helper"], workspace=workspace, database_url=database_url
    )
    assert res.code == 0, res.err
    assert "fallback" in res.out and "no LLM model configured" in res.out
    res = run_cli(
        ["files", "get", "--agent", "plain", "TOOLS.md"], workspace=workspace, database_url=database_url
    )
    assert res.out == tpl("TOOLS.md")
