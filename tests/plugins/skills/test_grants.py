"""Managed store, visibility, grants and allow lists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goclaw.errors import NotFoundError, ValidationError
from goclaw_skills.store import zip_bytes
from tests.helpers import run_cli
from tests.skills_helpers import no_builtin, write_skill


def _src(tmp_path: Path, slug: str, desc: str) -> Path:
    write_skill(tmp_path / "src", slug, desc)
    return tmp_path / "src" / slug


@pytest.fixture
def eng(make_engine, tmp_path: Path):  # type: ignore[no-untyped-def]
    e = make_engine(plugins=no_builtin(embeddings={"provider": "none"}))
    for name in ("alice-bot", "bob-bot"):
        e.agents.create(name)
    e.skills.add(_src(tmp_path, "open-skill", "public one"), visibility="public")
    e.skills.add(_src(tmp_path, "mine", "private of carol"), visibility="private", owner="carol")
    e.skills.add(_src(tmp_path, "team-only", "internal one"), visibility="internal")
    e.skills.add(_src(tmp_path, "user-only", "internal for dave"), visibility="internal")
    e.skills.grant("team-only", agent="alice-bot")
    e.skills.grant("user-only", user="dave")
    return e


def _slugs(e, agent=None, user=None, skill_filter=None) -> list[str]:  # type: ignore[no-untyped-def]
    return [s.slug for s in e.skills.list(agent, user, skill_filter)]


def test_list_accessible_across_three_visibilities(eng) -> None:  # type: ignore[no-untyped-def]
    la = eng.skills.list_accessible
    assert la() == ["open-skill"]
    assert la("alice-bot") == ["open-skill", "team-only"]
    assert la("bob-bot") == ["open-skill"]
    assert la("bob-bot", "carol") == ["mine", "open-skill"]
    assert la("bob-bot", "dave") == ["open-skill", "user-only"]
    assert la("alice-bot", "dave") == ["open-skill", "team-only", "user-only"]
    assert la(None, "mallory") == ["open-skill"]
    # The views, search and use_skill follow the same rules.
    assert _slugs(eng, "bob-bot", "carol") == ["mine", "open-skill"]
    assert [h.slug for h in eng.skills.search("internal", "bob-bot")] == []
    assert [h.slug for h in eng.skills.search("internal", "alice-bot")][:1] == ["team-only"]
    with pytest.raises(NotFoundError):
        eng.skills.use("team-only", "bob-bot")
    assert "internal one" in eng.skills.use("team-only", "alice-bot")
    # The operator view sees everything.
    assert _slugs(eng) == ["open-skill"]
    assert [s.slug for s in eng.skills.list(include_all=True)] == [
        "mine",
        "open-skill",
        "team-only",
        "user-only",
    ]


def test_revoke_and_visibility_changes_take_effect(eng) -> None:  # type: ignore[no-untyped-def]
    assert "team-only" in _slugs(eng, "alice-bot")
    assert eng.skills.revoke("team-only", agent="alice-bot") is True
    assert "team-only" not in _slugs(eng, "alice-bot")
    assert eng.skills.revoke("team-only", agent="alice-bot") is False
    eng.skills.set_visibility("team-only", "public")
    assert "team-only" in _slugs(eng, "bob-bot")
    eng.skills.set_visibility("mine", "internal")
    assert "mine" not in _slugs(eng, "bob-bot", "carol")
    with pytest.raises(ValidationError):
        eng.skills.set_visibility("mine", "everyone")
    with pytest.raises(NotFoundError):
        eng.skills.grant("no-such-skill", agent="alice-bot")


def test_hidden_managed_skill_never_shadows_or_leaks(eng, workspace: Path, home: Path) -> None:  # type: ignore[no-untyped-def]
    # A builtin-like lower copy: the private managed copy must not appear as its shadow.
    write_skill(home / ".goclaw" / "skills", "mine", "global file copy")
    eng.skills.reload()
    [item] = [s for s in eng.skills.list("bob-bot") if s.slug == "mine"]
    assert item.record.source == "global" and item.shadows == []
    [owner_view] = [s for s in eng.skills.list("bob-bot", "carol") if s.slug == "mine"]
    assert owner_view.record.source == "global" and [s.source for s in owner_view.shadows] == ["managed"]


def test_allow_list_and_request_override(eng, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    write_skill(workspace / "skills", "fs-a", "filesystem a")
    write_skill(workspace / "skills", "fs-b", "filesystem b")
    eng.skills.reload()
    assert _slugs(eng, "alice-bot") == ["fs-a", "fs-b", "open-skill", "team-only"]
    eng.agents.update_settings("alice-bot", skill_allow_list=[])
    assert _slugs(eng, "alice-bot") == []
    eng.agents.update_settings("alice-bot", skill_allow_list=["fs-b", "team-only", "mine"])
    assert _slugs(eng, "alice-bot") == [
        "fs-b",
        "team-only",
    ]  # "mine" is not granted: the list cannot widen access
    eng.agents.update_settings("alice-bot", skill_allow_list=None)
    assert len(_slugs(eng, "alice-bot")) == 4
    # The per-request filter overrides the agent's list but never the grants.
    eng.agents.update_settings("alice-bot", skill_allow_list=["fs-a"])
    assert _slugs(eng, "alice-bot", skill_filter=("fs-b", "mine")) == ["fs-b"]
    assert _slugs(eng, "alice-bot", skill_filter=()) == []
    assert [h.slug for h in eng.skills.search("filesystem", "alice-bot")] == ["fs-a"]


def test_versions_and_pinned_grant(eng, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = _src(tmp_path, "team-only", "internal one, version two")
    info = eng.skills.add(src)
    assert (info["version"], info["created"], info["visibility"]) == (2, False, "internal")
    assert eng.skills.add(src)["version"] == 2  # unchanged content: no new version
    assert "version two" in eng.skills.use("team-only", "alice-bot")
    eng.skills.grant("team-only", agent="alice-bot", pinned_version=1)
    pinned = eng.skills.use("team-only", "alice-bot")
    assert "internal one" in pinned and "version two" not in pinned
    [hit] = [s for s in eng.skills.list("alice-bot") if s.slug == "team-only"]
    assert hit.record.version == 1 and hit.record.description == "internal one"
    with pytest.raises(ValidationError):
        eng.skills.grant("team-only", agent="alice-bot", pinned_version=9)


def test_add_zip_and_bad_inputs(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    e = make_engine(plugins=no_builtin(embeddings={"provider": "none"}))
    z = tmp_path / "pack.zip"
    z.write_bytes(
        zip_bytes(
            {
                "zipped\\SKILL.md": "---\nname: zipped\ndescription: from a zip\n---\nSee {baseDir}/ref.md\n",
                "zipped\\ref.md": "reference",
            }
        )
    )
    info = e.skills.add(z, visibility="public")
    assert info["slug"] == "zipped" and info["files"] == ["ref.md"] and info["ignored_files"] == []
    assert "from a zip" in e.skills.use("zipped")
    evil = tmp_path / "evil.zip"
    evil.write_bytes(zip_bytes({"../x/SKILL.md": "---\nname: x\n---\n"}))
    with pytest.raises(ValidationError, match="unsafe path"):
        e.skills.add(evil)
    bad = tmp_path / "bad" / "bad"
    write_skill(bad.parent, "bad", raw="---\nname: [\n---\n")
    with pytest.raises(ValidationError, match="invalid YAML"):
        e.skills.add(bad)
    with pytest.raises(NotFoundError):
        e.skills.add(tmp_path / "missing")


def test_cli_add_grant_revoke_visibility(workspace: Path, home: Path, tmp_path: Path) -> None:
    (workspace / "goclaw.toml").write_text(
        '[plugins]\ndisable = ["goclaw.skills.tier.builtin"]\n[plugins.embeddings]\nprovider = "none"\n'
    )
    src = _src(tmp_path, "secret-sauce", "the internal recipe")
    assert run_cli(["agent", "create", "bot"], workspace=workspace).code == 0
    added = run_cli(["skills", "add", str(src), "--visibility", "internal", "--json"], workspace=workspace)
    assert added.code == 0, added.err
    assert json.loads(added.out)["version"] == 1

    def listed(*extra: str) -> list[str]:
        res = run_cli(["skills", "list", "--json", *extra], workspace=workspace)
        assert res.code == 0, res.err
        return [d["slug"] for d in json.loads(res.out)]

    assert listed("--agent", "bot") == []
    assert listed() == ["secret-sauce"]  # operator view
    assert run_cli(["skills", "grant", "secret-sauce", "--agent", "bot"], workspace=workspace).code == 0
    assert listed("--agent", "bot") == ["secret-sauce"]
    hits = run_cli(["skills", "search", "recipe", "--agent", "bot", "--json"], workspace=workspace)
    assert [h["slug"] for h in json.loads(hits.out)] == ["secret-sauce"]
    assert run_cli(["skills", "revoke", "secret-sauce", "--agent", "bot"], workspace=workspace).code == 0
    assert listed("--agent", "bot") == []
    none = run_cli(["skills", "search", "recipe", "--agent", "bot", "--json"], workspace=workspace)
    assert json.loads(none.out) == []
    assert run_cli(["skills", "visibility", "secret-sauce", "public"], workspace=workspace).code == 0
    assert listed("--agent", "bot") == ["secret-sauce"]
    bad = run_cli(["skills", "grant", "secret-sauce"], workspace=workspace)
    assert bad.code != 0 and bad.err.startswith("error: ")
    unknown = run_cli(["skills", "grant", "secret-sauce", "--agent", "ghost"], workspace=workspace)
    assert unknown.code != 0 and "ghost" in unknown.err


def test_writes_by_another_process_are_seen(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A second engine on the same database stands in for another process (its writes do not
    reach this engine's in-process listener); ``db_check_seconds = 0`` re-checks every use."""
    a = make_engine(plugins=no_builtin(embeddings={"provider": "none"}, skills={"db_check_seconds": 0}))
    a.agents.create("bot")
    b = make_engine(plugins=no_builtin(embeddings={"provider": "none"}))
    b.skills.add(_src(tmp_path, "shared-x", "added elsewhere"), visibility="internal")
    assert _slugs(a, "bot") == []
    b.skills.grant("shared-x", agent="bot")
    assert _slugs(a, "bot") == ["shared-x"]
    b.skills.set_config("skills.slash_commands.prefix", "!")
    assert a.skills.slash_config().prefix == "!"
    # With db_check_seconds > 0 (default 2 s) the value is trusted for a while: no query per
    # prompt build. An hour here, so a slow machine cannot turn "a while" into a re-check.
    c = make_engine(plugins=no_builtin(embeddings={"provider": "none"}, skills={"db_check_seconds": 3600}))
    assert _slugs(c, "bot") == ["shared-x"]
    b.skills.revoke("shared-x", agent="bot")
    assert _slugs(c, "bot") == ["shared-x"]  # cached, at most db_check_seconds old
    c.skills.reload()
    c.skills.changes.bump()
    assert _slugs(c, "bot") == []
