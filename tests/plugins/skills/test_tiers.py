"""The five tiers, override by slug, shadows, and a third-party tier."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from goclaw import hookimpl
from goclaw_skills import hookspecs as skill_hooks
from goclaw_skills.parsing import discover_folder
from goclaw_skills.tiers import BUILTIN_ROOT
from tests.helpers import run_cli
from tests.skills_helpers import no_builtin, write_skill


def _all_tiers(workspace: Path, home: Path) -> dict[str, Path]:
    return {
        "workspace": workspace / "skills",
        "project": workspace / ".agents" / "skills",
        "personal": home / ".agents" / "skills",
        "global": home / ".goclaw" / "skills",
    }


def test_tier_override_with_real_home(make_engine, workspace: Path, home: Path) -> None:  # type: ignore[no-untyped-def]
    roots = _all_tiers(workspace, home)
    # "shared" exists in every folder tier; each lower tier also has its own skill.
    for tier, root in roots.items():
        write_skill(root, "shared", f"shared from {tier}")
        write_skill(root, f"only-{tier}", f"only in {tier}")
    # A builtin slug overridden by the personal tier.
    builtin_slug = sorted(p.name for p in BUILTIN_ROOT.iterdir() if (p / "SKILL.md").exists())[0]
    write_skill(roots["personal"], builtin_slug, "personal override of a builtin")
    eng = make_engine()
    eng.skills.add(roots["workspace"] / "shared", visibility="public")  # managed copy, tier 4
    items = {s.slug: s.as_dict() for s in eng.skills.list(include_all=True)}

    shared = items["shared"]
    assert shared["source"] == "workspace"
    assert shared["description"] == "shared from workspace"
    assert shared["path"] == str(roots["workspace"] / "shared" / "SKILL.md")
    assert [s["source"] for s in shared["shadows"]] == ["project", "personal", "global", "managed"]
    for tier in roots:
        assert items[f"only-{tier}"]["source"] == tier
        assert items[f"only-{tier}"]["shadows"] == []
    assert items[builtin_slug]["source"] == "personal"
    assert [s["source"] for s in items[builtin_slug]["shadows"]] == ["builtin"]


def test_home_is_read_at_call_time(
    make_engine, workspace: Path, home: Path, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    write_skill(home / ".agents" / "skills", "first-home", "a")
    eng = make_engine(plugins=no_builtin())
    assert [s.slug for s in eng.skills.list()] == ["first-home"]
    other = tmp_path / "other-home"
    write_skill(other / ".agents" / "skills", "second-home", "b")
    monkeypatch.setenv("HOME", str(other))
    eng.skills.reload()
    assert [s.slug for s in eng.skills.list()] == ["second-home"]


class ExtraTier:
    """A third-party tier between project (2) and personal (3)."""

    def __init__(self, root: Path, priority: int) -> None:
        self.name = "team-share"
        self.priority = priority
        self.root = root

    def roots(self, engine: Any) -> list[Path]:
        return [self.root]

    def discover(self, engine: Any) -> Any:
        return discover_folder(self.root, source=self.name)


class ExtraTierPlugin:
    def __init__(self, tier: ExtraTier) -> None:
        self.tier = tier

    @hookimpl
    def goclaw_skill_tiers(self) -> list[Any]:
        return [self.tier]


def test_third_party_tier_at_chosen_priority(
    make_engine, workspace: Path, home: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    team = tmp_path / "team-skills"
    write_skill(team, "deploy", "team deploy")
    write_skill(workspace / ".agents" / "skills", "deploy", "project deploy")  # tier 2 beats the new tier
    write_skill(home / ".agents" / "skills", "deploy", "personal deploy")
    write_skill(team, "lint-all", "team lint")
    write_skill(home / ".agents" / "skills", "lint-all", "personal lint")
    eng = make_engine(
        plugins=no_builtin(), extra_plugins=[("team-tier", ExtraTierPlugin(ExtraTier(team, 3)))]
    )
    tiers = [(t.name, t.priority) for t in skill_hooks.tiers(eng)]
    # Same priority as "personal": ties sort by name, so "personal" < "team-share".
    assert tiers.index(("personal", 3)) < tiers.index(("team-share", 3))
    items = {s.slug: s for s in eng.skills.list()}
    assert items["deploy"].record.source == "project"
    assert [s.source for s in items["deploy"].shadows] == ["personal", "team-share"]

    eng2 = make_engine(
        plugins=no_builtin(), extra_plugins=[("team-tier", ExtraTierPlugin(ExtraTier(team, 1)))]
    )
    items2 = {s.slug: s for s in eng2.skills.list()}
    assert items2["lint-all"].record.source == "team-share"
    assert items2["deploy"].record.source == "team-share"
    assert [s.source for s in items2["deploy"].shadows] == ["project", "personal"]


def test_a_tier_can_be_disabled(make_engine, workspace: Path, home: Path) -> None:  # type: ignore[no-untyped-def]
    write_skill(workspace / "skills", "x", "ws")
    write_skill(home / ".agents" / "skills", "x", "personal")
    eng = make_engine(plugins=no_builtin(disable=["goclaw.skills.tier.workspace"]))
    [only] = eng.skills.list()
    assert (only.slug, only.record.source) == ("x", "personal")


def test_cli_list_json_shape(workspace: Path, home: Path) -> None:
    write_skill(workspace / "skills", "alpha", "Alpha & <beta>")
    write_skill(home / ".goclaw" / "skills", "alpha", "global alpha")
    res = run_cli(["skills", "list", "--json"], workspace=workspace)
    assert res.code == 0, res.err
    data = json.loads(res.out)
    alpha = next(d for d in data if d["slug"] == "alpha")
    assert set(alpha) == {"slug", "name", "description", "source", "path", "shadows"}
    assert alpha["source"] == "workspace" and alpha["description"] == "Alpha & <beta>"
    assert alpha["shadows"] == [
        {"source": "global", "path": str(home / ".goclaw" / "skills" / "alpha" / "SKILL.md")}
    ]
    assert any(d["source"] == "builtin" for d in data)
    show = run_cli(["skills", "show", "alpha"], workspace=workspace)
    assert show.code == 0 and "Alpha & <beta>" in show.out
    missing = run_cli(["skills", "show", "nope"], workspace=workspace)
    assert missing.code != 0 and missing.err.startswith("error: ")
