"""The plugin-author tutorial's plugin (docs/tutorial.md), installed with pip through its entry
point, does what the tutorial says: a prompt section, a skill tier, a search backend."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from goclaw.engine import Engine
from tests.helpers import run_cli
from tests.plugin_install import on_sys_path, pip_install_target


@pytest.fixture(scope="module")
def handbook_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pip_install_target("goclaw-handbook", tmp_path_factory.mktemp("handbook-site"))


@pytest.fixture
def handbook(handbook_site: Path, workspace: Path, tmp_path: Path) -> Iterator[Path]:
    shared = tmp_path / "team-skills"
    (shared / "deploy-checklist").mkdir(parents=True)
    (shared / "deploy-checklist" / "SKILL.md").write_text(
        "---\nname: deploy-checklist\ndescription: Steps to deploy the billing service safely\n---\n"
        "1. Freeze merges.\n2. Run the smoke tests.\n"
    )
    (shared / "code-review").mkdir()
    (shared / "code-review" / "SKILL.md").write_text(
        "---\nname: code-review\ndescription: The team's own review rules\n---\nTeam rules.\n"
    )
    (workspace / "goclaw.toml").write_text(
        "[plugins.handbook]\n"
        'on_call = "Dana (ext. 4412)"\n'
        f'skills_dir = "{shared}"\n'
        'synonyms = { k8s = ["kubernetes"] }\n'
    )
    with on_sys_path(handbook_site):
        yield workspace


def test_section_tier_and_backend(handbook: Path, database_url: str | None) -> None:
    with Engine.open(handbook, database_url=database_url) as engine:
        assert engine.plugin_manager.records["handbook"].status == "active"
        agent = engine.agents.create("ops")

        # 1. The section is in the prompt, between Current Time and Messaging.
        result = engine.prompt.build_for("ops", user="u1")
        names = [s["name"] for s in result.sections]
        assert "team_handbook" in names
        assert "Dana (ext. 4412)" in result.prompt

        # 2. The tier serves the shared folder; the builtin code-review is shadowed by it.
        skills = {s.slug: s for s in engine.skills.list("ops", include_all=True)}
        assert skills["deploy-checklist"].record.source == "handbook"
        assert skills["code-review"].record.source == "handbook"
        assert "builtin" in [c.source for c in skills["code-review"].shadows]

        # 3. The synonyms backend: "k8s" finds a note that only says "kubernetes".
        folder = engine.agent_dir(agent)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "MEMORY.md").write_text("# Infra\n\nThe kubernetes cluster runs in eu-west-1.\n")
        engine.memory.index("ops")
        assert not engine.memory.search("k8s", "ops", channel="lexical")
    with Engine.open(
        handbook, database_url=database_url, plugins={"memory": {"backend": "synonyms"}}
    ) as engine:
        hits = engine.memory.search("k8s", "ops", channel="lexical")
        assert hits and "kubernetes" in hits[0].snippet
        # It wraps the database's default backend, what "auto" selects (postgresql on PostgreSQL).
        from goclaw_memory.settings import resolve_backend

        assert engine.memory.backend.base.name == resolve_backend("auto", engine.db.backend)


def test_cli_lists_the_tutorial_plugin(handbook: Path) -> None:
    result = run_cli(["plugins", "--json"], workspace=handbook)
    [row] = [r for r in json.loads(result.out) if r["name"] == "handbook"]
    assert row["status"] == "active"
    assert set(row["hooks"]) >= {"goclaw_prompt_sections", "goclaw_skill_tiers", "goclaw_search_backends"}
