"""The Skills prompt section and the slash commands."""

from __future__ import annotations

import html
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from goclaw.contracts.hooks import PromptRequest, SlashResult
from goclaw.contracts.host import PromptContext
from goclaw.tokenizer import CharsTokenizer
from goclaw_prompt import hookspecs as prompt_hooks
from goclaw_skills.slash import DEFAULT_MESSAGE
from tests.conftest import BACKENDS, module_engine
from tests.skills_helpers import no_builtin, write_skill


def _ctx(
    eng: Any, agent: str = "bot", *, user: str = "", message: str | None = None, **req: Any
) -> PromptContext:
    return PromptContext(
        engine=eng,
        request=PromptRequest(agent=agent, user=user or None, message=message, **req),
        agent=eng.agents.get(agent),
        user=user,
        mode="full",
    )


def _section(eng: Any) -> Any:
    [section] = [s for s in prompt_hooks.sections(eng) if s.name == "skills"]
    assert section.order == 4 and section.modes == frozenset({"full", "task"})
    return section


def _slash(eng: Any, ctx: PromptContext, text: str) -> SlashResult | None:
    """What the prompt builder does: the first command in (order, name) order that answers."""
    for cmd in prompt_hooks.slash_commands(eng):
        result = cmd.handle(text, ctx)
        if result is not None:
            ctx.state["slash"] = result
            return result
    return None


@pytest.fixture
def eng(make_engine):  # type: ignore[no-untyped-def]
    e = make_engine(plugins=no_builtin(embeddings={"provider": "none"}, skills={"watch": False}))
    e.agents.create("bot")
    return e


# --------------------------------------------------------------------------- inline vs search


def test_inline_at_20_search_at_21(eng, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    section = _section(eng)
    ctx = _ctx(eng)
    assert section.render(ctx) is None and ctx.state["skills_mode"] is None
    for i in range(20):
        write_skill(workspace / "skills", f"s{i:02d}", f"Skill number {i} uses <tags> & ampersands")
    eng.skills.reload()
    ctx = _ctx(eng)
    text = section.render(ctx)
    assert ctx.state["skills_mode"] == "inline" and ctx.state["activated_skill"] is None
    assert text.count("<skill>") == 20 and "<available_skills>" in text
    assert "<description>Skill number 3 uses &lt;tags&gt; &amp; ampersands</description>" in text
    assert (
        f"<location>{html.escape(str(workspace / 'skills' / 's03' / 'SKILL.md'), quote=False)}</location>"
        in text
    )
    write_skill(workspace / "skills", "s20", "one more")
    eng.skills.reload()
    ctx = _ctx(eng)
    text = section.render(ctx)
    assert ctx.state["skills_mode"] == "search"
    assert "skill_search" in text and "<available_skills>" not in text and "21 skills" in text


def test_token_threshold(eng, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # Two skills, name 2 chars each; descriptions sized so name+desc chars = 4 × 3500 exactly.
    eng.__dict__["tokenizer"] = CharsTokenizer()  # the characters ÷ 4 fallback
    write_skill(workspace / "skills", "aa", "d" * 6998)
    write_skill(workspace / "skills", "bb", "d" * 6998)
    eng.skills.reload()
    ctx = _ctx(eng)
    _section(eng).render(ctx)
    assert ctx.state["skills_mode"] == "inline"  # (2+6998)*2 / 4 = 3500 tokens
    write_skill(workspace / "skills", "bb", "d" * 6999)
    eng.skills.reload()
    ctx = _ctx(eng)
    _section(eng).render(ctx)
    assert ctx.state["skills_mode"] == "search"  # 3500.25 > 3500


def test_thresholds_are_configurable(make_engine, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    for i in range(3):
        write_skill(workspace / "skills", f"k{i}", "short")
    eng = make_engine(plugins=no_builtin(skills={"inline_max_skills": 2, "watch": False}))
    eng.agents.create("bot")
    ctx = _ctx(eng)
    _section(eng).render(ctx)
    assert ctx.state["skills_mode"] == "search"


def test_allow_list_narrows_the_section(eng, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    for i in range(25):
        write_skill(workspace / "skills", f"s{i:02d}", "x")
    eng.skills.reload()
    eng.agents.update_settings("bot", skill_allow_list=["s01", "s02"])
    ctx = _ctx(eng)
    text = _section(eng).render(ctx)
    assert ctx.state["skills_mode"] == "inline" and text.count("<skill>") == 2
    ctx = _ctx(eng, skill_filter=("s03",))
    text = _section(eng).render(ctx)
    assert "<slug>s03</slug>" in text and text.count("<skill>") == 1
    eng.agents.update_settings("bot", skill_allow_list=[])
    ctx = _ctx(eng)
    assert _section(eng).render(ctx) is None and ctx.state["skills_mode"] is None


# --------------------------------------------------------------------------- slash commands


def _slash_skills(eng: Any, workspace: Path, tmp_path: Path) -> Any:
    root = workspace / "skills"
    write_skill(
        root, "frontend-design", "Design web UIs", name="Frontend Design", body="Use {baseDir}/tokens.css\n"
    )
    write_skill(root, "front-office", "Reception desk", name="Front Office")
    write_skill(root, "pdf", "PDF things")
    write_skill(root, "secret-plan", "Top secret planning")
    eng.agents.update_settings("bot", skill_allow_list=["frontend-design", "front-office", "pdf"])
    # A managed skill the agent is not granted.
    write_skill(tmp_path / "m", "hidden-gem", "internal only")
    eng.skills.add(tmp_path / "m" / "hidden-gem", visibility="internal")
    return eng


@pytest.fixture
def slash_eng(eng, workspace: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    return _slash_skills(eng, workspace, tmp_path)


@pytest.fixture(scope="module", params=BACKENDS)
def probe_eng(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``slash_eng`` built once per database for the parametrized probes that only ask the slash
    commands and render the section (~90 fresh engines otherwise); tests that change settings,
    grants or skills use ``slash_eng``."""
    base = tmp_path_factory.mktemp("slash-probes")
    plugins = no_builtin(embeddings={"provider": "none"}, skills={"watch": False})
    with module_engine(request.param, base, plugins=plugins) as eng:
        eng.agents.create("bot")
        yield _slash_skills(eng, base / "ws", base)


def test_direct_slug_activation_injects_full_skill_md(slash_eng, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    ctx = _ctx(slash_eng, message="/frontend-design make a login page")
    res = _slash(slash_eng, ctx, ctx.request.message)
    assert res == SlashResult(command="skill", skill="frontend-design", message="make a login page")
    text = _section(slash_eng).render(ctx)
    assert ctx.state["activated_skill"] == "frontend-design" and ctx.state["skills_mode"] == "inline"
    path = workspace / "skills" / "frontend-design" / "SKILL.md"
    expected = path.read_text().replace("{baseDir}", str(path.parent))
    assert expected.strip() in text
    assert text.count("<skill>") == 1  # the turn is narrowed to the activated skill
    # The next turn (no slash) is back to normal: no injection.
    ctx2 = _ctx(slash_eng, message="hello")
    assert _slash(slash_eng, ctx2, "hello") is None
    text2 = _section(slash_eng).render(ctx2)
    assert ctx2.state["activated_skill"] is None and expected.strip() not in text2


@pytest.mark.parametrize(
    ("text", "skill", "message"),
    [
        ("/use frontend-design build it", "frontend-design", "build it"),
        ("/use Frontend Design build it", "frontend-design", "build it"),
        ("/USE front office", "front-office", DEFAULT_MESSAGE),
        ("/activate pdf merge these", "pdf", "merge these"),
        ("  /pdf  ", "pdf", DEFAULT_MESSAGE),
        ("/Front Office greet the guest", "front-office", "greet the guest"),
    ],
)
def test_use_and_name_matching(probe_eng, text: str, skill: str, message: str) -> None:  # type: ignore[no-untyped-def]
    ctx = _ctx(probe_eng)
    res = _slash(probe_eng, ctx, text)
    assert res is not None and (res.skill, res.message) == (skill, message)


@pytest.mark.parametrize(
    "text",
    [
        "/home/user/file.txt",
        "/etc/passwd is broken",
        "/./x",
        "/C:\\temp",
        "/v1.2 released",
        "hello /pdf",
        "/",
        "/use",
        "/help",
    ],
)
def test_not_commands_pass_through(probe_eng, text: str) -> None:  # type: ignore[no-untyped-def]
    assert _slash(probe_eng, _ctx(probe_eng), text) is None


def test_list_skills_and_help(slash_eng) -> None:  # type: ignore[no-untyped-def]
    ctx = _ctx(slash_eng)
    res = _slash(slash_eng, ctx, "/list-skills")
    assert res is not None and res.command == "list-skills" and res.skill is None
    assert res.reply == (
        "Available skills:\n- `front-office` - Reception desk\n"
        "- `frontend-design` - Design web UIs\n- `pdf` - PDF things"
    )
    help_res = _slash(slash_eng, _ctx(slash_eng), "/help Frontend Design")
    assert help_res is not None and help_res.command == "help" and help_res.skill is None
    assert "Design web UIs" in help_res.reply and "/frontend-design" in help_res.reply


def test_unknown_with_and_without_suggestions(slash_eng) -> None:  # type: ignore[no-untyped-def]
    res = _slash(slash_eng, _ctx(slash_eng), "/pfd merge")
    assert res is not None and res.skill is None and res.suggestions[0] == "pdf" and "`/pdf`" in res.reply
    res = _slash(slash_eng, _ctx(slash_eng), "/front")  # ambiguous prefix without partial matching
    assert res is not None and res.suggestions == ["front-office", "frontend-design"]
    assert _slash(slash_eng, _ctx(slash_eng), "/zzzzzzzzzz do it") is None  # nothing close: unchanged
    assert _slash(slash_eng, _ctx(slash_eng), "/use zzzzzzzz") is None
    slash_eng.skills.set_config("skills.slash_commands.suggest_not_found", "false")
    assert _slash(slash_eng, _ctx(slash_eng), "/pfd merge") is None


@pytest.mark.parametrize(
    "text",
    [
        "/ok thanks",
        "/hi",
        "/no way",
        "/why is this broken",
        "/yes please",
        "/the quick brown fox",
        "/pls do it",
        "/wow",
        "/help me",
    ],
)
def test_prose_after_the_prefix_reaches_the_model(probe_eng, text: str) -> None:  # type: ignore[no-untyped-def]
    # Every short word is within 3 edits of a short slug ("ok" → "pdf"): short prose goes to the
    # model, not to a "No skill matches `ok`. Did you mean ..." reply.
    assert _slash(probe_eng, _ctx(probe_eng), text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/pfd merge", ["pdf"]),  # a swap of two letters is one edit
        ("/pdff", ["pdf"]),
        ("/frontend-desing x", ["frontend-design"]),
        ("/front-ofice", ["front-office"]),
        ("/design a page", ["frontend-design"]),  # a whole word of the slug or name
        ("/fronted a page", ["frontend-design", "front-office"]),
        ("/use frontend-dezign", ["frontend-design"]),
        ("/help Frontend Desing", ["frontend-design"]),
    ],
)
def test_real_typos_still_get_suggestions(probe_eng, text: str, expected: list[str]) -> None:  # type: ignore[no-untyped-def]
    res = _slash(probe_eng, _ctx(probe_eng), text)
    assert res is not None and res.skill is None and res.suggestions == expected


def test_suggestion_distance_grows_with_length() -> None:
    from goclaw_skills.slash import allowed_distance, edit_distance

    assert [allowed_distance(n) for n in (3, 5, 6, 8, 9, 40)] == [1, 1, 2, 2, 3, 3]
    assert edit_distance("pfd", "pdf") == 1 and edit_distance("ok", "pd") == 2
    assert edit_distance("kitten", "sitting") == 3 and edit_distance("", "abc") == 3


def test_system_config_keys(slash_eng) -> None:  # type: ignore[no-untyped-def]
    slash_eng.skills.set_config("skills.slash_commands.partial_matching", "yes")
    res = _slash(slash_eng, _ctx(slash_eng), "/frontend build")
    assert res is not None and (res.skill, res.message) == ("frontend-design", "build")
    res = _slash(slash_eng, _ctx(slash_eng), "/front x")  # two skills share the prefix: a tie is no match
    assert res is not None and res.skill is None
    slash_eng.skills.set_config("skills.slash_commands.prefix", "!")
    assert _slash(slash_eng, _ctx(slash_eng), "/pdf go") is None
    res = _slash(slash_eng, _ctx(slash_eng), "!pdf go")
    assert res is not None and res.skill == "pdf"
    slash_eng.skills.set_config("skills.slash_commands.prefix", "!!")  # invalid: back to "/"
    assert _slash(slash_eng, _ctx(slash_eng), "/pdf go").skill == "pdf"  # type: ignore[union-attr]
    slash_eng.skills.set_config("skills.slash_commands.enabled", "off")
    assert _slash(slash_eng, _ctx(slash_eng), "/pdf go") is None
    assert _slash(slash_eng, _ctx(slash_eng), "/list-skills") is None


LEAK_PROBES = [
    "/secret-plan do it",
    "/use secret-plan",
    "/use Secret Plan",
    "/help secret-plan",
    "/secret-plam",
    "/secret",
    "/hidden-gem",
    "/use hidden-gem",
    "/help hidden-gem",
    "/hidden-gen",
    "/list-skills",
]


@pytest.mark.parametrize("text", LEAK_PROBES)
def test_no_leaks_through_slash_commands(probe_eng, text: str) -> None:  # type: ignore[no-untyped-def]
    ctx = _ctx(probe_eng)
    res = _slash(probe_eng, ctx, text)
    for hidden in ("secret-plan", "Top secret", "hidden-gem", "internal only"):
        if res is not None:
            assert hidden not in (res.reply or "") or hidden in text
            assert res.skill not in ("secret-plan", "hidden-gem")
            assert hidden not in res.suggestions
    _section(probe_eng).render(ctx)
    assert ctx.state["activated_skill"] not in ("secret-plan", "hidden-gem")


def test_granted_skill_becomes_reachable(slash_eng) -> None:  # type: ignore[no-untyped-def]
    slash_eng.agents.update_settings("bot", skill_allow_list=None)
    assert _slash(slash_eng, _ctx(slash_eng), "/hidden-gem go") is None  # still not granted
    slash_eng.skills.grant("hidden-gem", agent="bot")
    res = _slash(slash_eng, _ctx(slash_eng), "/hidden-gem go")
    assert res is not None and res.skill == "hidden-gem"


def test_request_filter_limits_slash_commands(slash_eng) -> None:  # type: ignore[no-untyped-def]
    ctx = _ctx(slash_eng, skill_filter=("pdf",))
    assert _slash(slash_eng, ctx, "/frontend-design x") is None or ctx.state["slash"].skill is None
    res = _slash(slash_eng, _ctx(slash_eng, skill_filter=("pdf",)), "/list-skills")
    assert res is not None and res.reply == "Available skills:\n- `pdf` - PDF things"


# --------------------------------------------------------------------------- tools


def test_tools(slash_eng) -> None:  # type: ignore[no-untyped-def]
    import json

    tools = {t.name: t for t in slash_eng.hooks.tools(slash_eng) if t.name in ("skill_search", "use_skill")}
    assert set(tools) == {"skill_search", "use_skill"}
    hits = json.loads(tools["skill_search"].func("pdf things", agent="bot"))
    assert hits[0]["slug"] == "pdf" and set(hits[0]) == {"slug", "name", "score", "source"}
    assert json.loads(tools["skill_search"].func("secret planning", agent="bot")) == []
    assert "PDF things" in tools["use_skill"].func("pdf", agent="bot")
    with pytest.raises(Exception, match="no skill"):
        tools["use_skill"].func("secret-plan", agent="bot")


def test_prompt_builder_integration(slash_eng) -> None:  # type: ignore[no-untyped-def]
    from goclaw.errors import FeatureUnavailableError

    try:
        result = slash_eng.prompt.build(PromptRequest(agent="bot", message="/pdf merge these"))
    except FeatureUnavailableError:
        pytest.skip("the prompt builder is not available yet")
    prompt = result if isinstance(result, str) else getattr(result, "prompt", str(result))
    assert "## Explicit Skill Activation" in prompt and "PDF things" in prompt
    if not isinstance(result, str):
        assert getattr(result, "activated_skill", "pdf") == "pdf"
        assert getattr(result, "skills_mode", "inline") == "inline"
