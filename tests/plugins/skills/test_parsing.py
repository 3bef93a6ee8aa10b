"""SKILL.md parsing, malformed files and lint."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from goclaw_skills.parsing import (
    SkillParseError,
    SkillProblem,
    SkillRecord,
    discover_folder,
    lint_skill,
    load_skill_folder,
    split_frontmatter,
)
from tests.helpers import run_cli
from tests.skills_helpers import no_builtin, write_skill


def test_yaml_frontmatter_keeps_agent_skills_fields(tmp_path: Path) -> None:
    raw = (
        "---\r\nname: pdf-tools\r\ndescription: >-\r\n  Extract text\r\n  from PDFs\r\n"
        "license: MIT\r\ncompatibility: needs poppler\r\nmetadata:\r\n  author: me\r\n"
        "allowed-tools: Bash Read\r\n---\r\nRun {baseDir}/extract.py\r\n"
    )
    write_skill(tmp_path, "pdf-tools", raw=raw)
    rec = load_skill_folder(tmp_path / "pdf-tools", tmp_path)
    assert rec.name == "pdf-tools"
    assert rec.description == "Extract text from PDFs"
    assert rec.metadata == {
        "license": "MIT",
        "compatibility": "needs poppler",
        "metadata": {"author": "me"},
        "allowed-tools": "Bash Read",
    }
    assert "\r" not in rec.content
    folder = str((tmp_path / "pdf-tools").absolute())
    assert rec.instructions().endswith(f"Run {folder}/extract.py\n")
    assert rec.base_dir == folder


def test_json_frontmatter(tmp_path: Path) -> None:
    write_skill(tmp_path, "j", raw='---\n{"name": "Jay", "description": "json one"}\n---\nbody\n')
    rec = load_skill_folder(tmp_path / "j", tmp_path)
    assert (rec.slug, rec.name, rec.description, rec.body) == ("j", "Jay", "json one", "body\n")


def test_no_frontmatter_uses_folder_name(tmp_path: Path) -> None:
    write_skill(tmp_path, "plain", raw="# Just instructions\n")
    rec = load_skill_folder(tmp_path / "plain", tmp_path)
    assert (rec.name, rec.description, rec.frontmatter) == ("plain", "", {})


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("---\nname: [unclosed\n---\nx\n", "invalid YAML frontmatter"),
        ("---\n- a\n- b\n---\nx\n", "frontmatter must be a mapping"),
        ('---\n{"name": \n---\nx\n', "invalid JSON frontmatter"),
    ],
)
def test_bad_frontmatter_raises(raw: str, reason: str) -> None:
    with pytest.raises(SkillParseError, match=reason):
        split_frontmatter(raw)


def _problems(root: Path) -> dict[str, str]:
    return {
        Path(p.path).parent.name: p.reason
        for p in discover_folder(root, max_bytes=1000)
        if isinstance(p, SkillProblem)
    }


def test_every_malformed_case_is_reported_and_skipped(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root, "good", "fine")
    write_skill(root, "bad-yaml", raw="---\nname: x: y: [\n---\nbody\n")
    (root / "binary").mkdir()
    (root / "binary" / "SKILL.md").write_bytes(b"---\nname: b\n---\n\x00\x01\x02")
    (root / "latin1").mkdir()
    (root / "latin1" / "SKILL.md").write_bytes("caf\xe9".encode("latin-1"))
    write_skill(root, "huge", "big", body="x" * 2000)
    outside = tmp_path / "outside"
    write_skill(outside, "evil", "escapes")
    os.symlink(outside / "evil", root / "escape-dir")
    (root / "escape-file").mkdir()
    os.symlink(outside / "evil" / "SKILL.md", root / "escape-file" / "SKILL.md")
    # A symlink that stays inside the root is fine.
    os.symlink(root / "good", root / "alias")

    items = list(discover_folder(root, max_bytes=1000))
    loaded = sorted(i.slug for i in items if isinstance(i, SkillRecord))
    assert loaded == ["alias", "good"]
    problems = _problems(root)
    assert set(problems) == {"bad-yaml", "binary", "latin1", "huge", "escape-dir", "escape-file"}
    assert "invalid YAML" in problems["bad-yaml"]
    assert "binary" in problems["binary"] and "binary" in problems["latin1"]
    assert "oversized" in problems["huge"]
    assert "symlink escapes" in problems["escape-dir"] and "symlink escapes" in problems["escape-file"]
    for p in items:
        if isinstance(p, SkillProblem):
            assert p.path.endswith("SKILL.md") and str(root) in p.path


def test_cli_list_warns_once_on_stderr_and_keeps_json_clean(workspace: Path, home: Path) -> None:
    import logging
    from unittest import mock

    write_skill(workspace / "skills", "ok", "works")
    write_skill(workspace / "skills", "broken", raw="---\nname: [\n---\n")
    (workspace / "goclaw.toml").write_text('[plugins]\ndisable = ["goclaw.skills.tier.builtin"]\n')
    # Logging as in a real CLI process: no handler on the root logger (pytest adds its own).
    with mock.patch.object(logging.getLogger(), "handlers", []):
        res = run_cli(["skills", "list", "--json"], workspace=workspace)
    assert res.code == 0, res.err
    data = json.loads(res.out)
    assert [d["slug"] for d in data] == ["ok"]
    assert "broken" in res.err and "SKILL.md" in res.err and "invalid YAML" in res.err
    # One line on stderr: the command's own, not the loader's log line as well.
    [line] = res.err.splitlines()
    assert line.startswith("warning: skipped skill ") and line.count("broken") == 1


def test_real_cli_process_prints_each_skill_warning_once(workspace: Path, home: Path) -> None:
    import subprocess
    import sys

    write_skill(workspace / "skills", "broken", raw="---\nname: [\n---\n")
    (workspace / "goclaw.toml").write_text('[plugins]\ndisable = ["goclaw.skills.tier.builtin"]\n')
    proc = subprocess.run(
        [sys.executable, "-c", "from goclaw.cli import main; main()", "skills", "list", "--json"],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(home)},
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []
    assert proc.stderr.count("broken") == 1 and proc.stderr.startswith("warning: skipped skill "), proc.stderr


def test_lint_rules(tmp_path: Path) -> None:
    def rec(slug: str, raw: str) -> SkillRecord:
        write_skill(tmp_path, slug, raw=raw)
        return load_skill_folder(tmp_path / slug, tmp_path)

    assert lint_skill(rec("fine", "---\nname: fine\ndescription: ok\n---\nbody\n")) == []
    probs = lint_skill(rec("Bad_Name", "---\nname: Bad_Name\ndescription: ok\n---\n"))
    assert any("lowercase" in p for p in probs)
    assert any(
        "does not match its folder" in p
        for p in lint_skill(rec("a1", "---\nname: a2\ndescription: d\n---\n"))
    )
    long = "a" * 65
    assert any(
        "65 characters" in p for p in lint_skill(rec(long, f"---\nname: {long}\ndescription: d\n---\n"))
    )
    ok64 = "b" * 64
    assert lint_skill(rec(ok64, f"---\nname: {ok64}\ndescription: d\n---\n")) == []
    assert any("description" in p for p in lint_skill(rec("nodesc", "---\nname: nodesc\n---\n")))
    d1024, d1025 = "d" * 1024, "d" * 1025
    assert lint_skill(rec("d-ok", f"---\nname: d-ok\ndescription: {d1024}\n---\n")) == []
    assert any(
        "1025" in p for p in lint_skill(rec("d-bad", f"---\nname: d-bad\ndescription: {d1025}\n---\n"))
    )
    fm = "---\nname: {0}\ndescription: d\n---\n"
    assert lint_skill(rec("lines-ok", fm.format("lines-ok") + "l\n" * 499)) == []
    assert any("500 lines" in p for p in lint_skill(rec("lines-bad", fm.format("lines-bad") + "l\n" * 500)))


def test_cli_lint_exit_codes(workspace: Path, home: Path) -> None:
    (workspace / "goclaw.toml").write_text('[plugins]\ndisable = ["goclaw.skills.tier.builtin"]\n')
    write_skill(workspace / "skills", "clean", "A clean skill")
    ok = run_cli(["skills", "lint"], workspace=workspace)
    assert ok.code == 0, ok.out + ok.err
    write_skill(workspace / ".agents" / "skills", "messy", "x", name="Messy Name")
    bad = run_cli(["skills", "lint", "--json"], workspace=workspace)
    assert bad.code == 1
    results = {r["slug"]: r for r in json.loads(bad.out)}
    assert results["clean"]["problems"] == []
    assert any("does not match" in p for p in results["messy"]["problems"])
    # A path argument lints just that folder.
    only = run_cli(["skills", "lint", str(workspace / "skills" / "clean")], workspace=workspace)
    assert only.code == 0


def test_builtin_skills_are_lint_clean(workspace: Path, home: Path) -> None:
    res = run_cli(["skills", "lint", "--json"], workspace=workspace)
    assert res.code == 0, res.out
    builtin = [r for r in json.loads(res.out) if r["source"] == "builtin"]
    assert len(builtin) >= 2 and all(r["problems"] == [] for r in builtin)


def test_engine_never_fails_on_malformed_skill(make_engine, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    write_skill(workspace / "skills", "good", "good one")
    (workspace / "skills" / "bin").mkdir(parents=True)
    (workspace / "skills" / "bin" / "SKILL.md").write_bytes(b"\x89PNG\x00\x00")
    eng = make_engine(plugins=no_builtin())
    assert [s.slug for s in eng.skills.list()] == ["good"]
    assert [Path(p.path).parent.name for p in eng.skills.problems()] == ["bin"]
