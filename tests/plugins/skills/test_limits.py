"""Untrusted skills are parsed with limits: YAML alias bombs, deep JSON/YAML, huge
frontmatter, ZIP bombs and lying ZIP headers are refused with their path, quickly and in
bounded memory, and one bad skill never hides the others."""

from __future__ import annotations

import json
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import pytest

from goclaw.errors import ValidationError
from goclaw_skills.limits import MAX_DEPTH, MAX_FRONTMATTER_CHARS, MAX_MEMBERS, json_depth
from goclaw_skills.parsing import SkillParseError, split_frontmatter
from goclaw_skills.store import read_skill_source
from tests.helpers import run_cli
from tests.skills_helpers import no_builtin, write_skill


def laughs(levels: int = 9) -> str:
    """The "billion laughs" frontmatter: ``levels`` of 9× nested aliases (9 ** (levels + 1) lols)."""
    lines = ["---", "name: laughs", "description: a skill", "a0: &a0 [lol,lol,lol,lol,lol,lol,lol,lol,lol]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    lines += [f"metadata: *a{levels}", "---", "body"]
    return "\n".join(lines) + "\n"


def deep_json(depth: int = 20_000) -> str:
    return '---\n{"name": "deep", "metadata": ' + "[" * depth + "]" * depth + "}\n---\nbody\n"


def deep_yaml(depth: int = MAX_DEPTH + 8) -> str:
    lines = ["---", "name: deep-yaml", "metadata:"]
    lines += [f"{'  ' * (i + 1)}k{i}:" for i in range(depth)]
    return "\n".join(lines) + " x\n---\nbody\n"


def test_the_502_byte_alias_bomb_is_refused_at_once() -> None:
    text = laughs()
    assert len(text.encode()) < 600
    with pytest.raises(SkillParseError, match="anchors and aliases"):
        split_frontmatter(text)
    # anchors without aliases are refused too: frontmatter never needs them
    with pytest.raises(SkillParseError, match="anchors and aliases"):
        split_frontmatter("---\nname: &n x\n---\n")


def test_depth_and_size_limits() -> None:
    with pytest.raises(SkillParseError, match="nested deeper"):
        split_frontmatter(deep_json())
    with pytest.raises(SkillParseError, match="nested deeper"):
        split_frontmatter(deep_yaml())
    ok = deep_yaml(MAX_DEPTH - 2)
    assert split_frontmatter(ok)[0]["name"] == "deep-yaml"
    assert json_depth('{"a": "[[[[", "b": [[1], {"c": "\\"]"}]}') == 3
    big = "---\nname: big\ndescription: " + "x" * MAX_FRONTMATTER_CHARS + "\n---\n"
    with pytest.raises(SkillParseError, match="frontmatter too large"):
        split_frontmatter(big)


def test_bad_skills_are_reported_with_their_path_and_never_hide_the_others(
    make_engine: Any, workspace: Path
) -> None:
    root = workspace / "skills"
    write_skill(root, "good", "a fine skill")
    write_skill(root, "laughs", raw=laughs())
    write_skill(root, "deep", raw=deep_json())  # RecursionError took the whole tier down
    write_skill(root, "deep-yaml", raw=deep_yaml())
    write_skill(root, "big", raw="---\nname: big\ndescription: " + "x" * 100_000 + "\n---\n")
    eng = make_engine(plugins=no_builtin(embeddings={"provider": "none"}, skills={"watch": False}))
    assert [s.slug for s in eng.skills.list(include_all=True)] == ["good"]
    problems = {Path(p.path).parent.name: p.reason for p in eng.skills.problems()}
    assert set(problems) == {"laughs", "deep", "deep-yaml", "big"}
    assert "aliases" in problems["laughs"] and "nested deeper" in problems["deep"]
    assert all(p.path.endswith("SKILL.md") and str(root) in p.path for p in eng.skills.problems())


def test_a_bad_managed_row_never_hides_the_other_managed_skills(make_engine: Any, tmp_path: Path) -> None:
    from goclaw_skills.tables import Skill

    eng = make_engine(plugins=no_builtin(embeddings={"provider": "none"}, skills={"watch": False}))
    write_skill(tmp_path, "fine", "stored fine")
    eng.skills.add(tmp_path / "fine", visibility="public")

    def _insert(s: Any) -> None:  # a row written before the limits existed
        s.add(Skill(tenant_id=eng.settings.tenant_id, slug="old-deep", version=1, content=deep_json()))

    eng.db.run_write(_insert)
    eng.skills.reload()
    assert [s.slug for s in eng.skills.list(include_all=True)] == ["fine"]
    assert any(p.path == "managed://old-deep" for p in eng.skills.problems())


def test_skills_add_refuses_bombs_with_a_one_line_error(make_engine: Any, tmp_path: Path) -> None:
    eng = make_engine(plugins=no_builtin(embeddings={"provider": "none"}, skills={"watch": False}))
    # 9 ** 7 lols: before the limits, serialising the frontmatter expanded every one of them
    write_skill(tmp_path, "laughs", raw=laughs(6))
    with pytest.raises(ValidationError, match="aliases"):
        eng.skills.add(tmp_path / "laughs")
    write_skill(tmp_path, "deep", raw=deep_json())
    with pytest.raises(ValidationError, match="nested deeper"):
        eng.skills.add(tmp_path / "deep" / "SKILL.md")
    assert eng.skills.managed() == []


def _bomb(path: Path, megabytes: int) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf, zf.open("bomb/SKILL.md", "w") as f:
        f.write(b"---\nname: bomb\n---\n")
        chunk = b" " * (1 << 20)
        for _ in range(megabytes):
            f.write(chunk)


def test_a_zip_bomb_is_refused_before_it_is_inflated(tmp_path: Path) -> None:
    z = tmp_path / "bomb.zip"
    _bomb(z, 64)
    assert z.stat().st_size < 1 << 20  # well under 1 MB on disk
    tracemalloc.start()
    try:
        with pytest.raises(ValidationError, match="oversized"):
            read_skill_source(z)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, f"{peak:,} bytes held while refusing a 64 MB member"


def test_a_zip_whose_header_lies_about_the_size_is_read_with_a_cap(tmp_path: Path) -> None:
    z = tmp_path / "liar.zip"
    _bomb(z, 2)
    data = bytearray(z.read_bytes())
    info = zipfile.ZipFile(z).getinfo("bomb/SKILL.md")
    real = info.file_size.to_bytes(4, "little")
    small = (100).to_bytes(4, "little")
    # the uncompressed size lives in the local header (offset 22) and the central directory (24)
    for sig, off in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.index(sig) + off
        assert data[at : at + 4] in (real, b"\x00\x00\x00\x00")
        data[at : at + 4] = small
    z.write_bytes(bytes(data))
    with pytest.raises(ValidationError, match="cannot read"):
        read_skill_source(z)


def test_archive_entry_count_is_limited(tmp_path: Path) -> None:
    z = tmp_path / "many.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("many/SKILL.md", "---\nname: many\n---\n")
        for i in range(MAX_MEMBERS + 1):
            zf.writestr(f"many/f{i}", "")
    with pytest.raises(ValidationError, match="entries"):
        read_skill_source(z)


def test_cli_add_of_a_bomb_is_one_line(workspace: Path, home: Path, tmp_path: Path) -> None:
    (workspace / "goclaw.toml").write_text('[plugins]\ndisable = ["goclaw.skills.tier.builtin"]\n')
    z = tmp_path / "bomb.zip"
    _bomb(z, 8)
    res = run_cli(["skills", "add", str(z)], workspace=workspace)
    assert res.code != 0 and res.err.startswith("error: ") and res.err.count("\n") == 1, res.err
    assert "bomb.zip" in res.err and "oversized" in res.err
    write_skill(tmp_path, "deep", raw=deep_json())
    res = run_cli(["skills", "add", str(tmp_path / "deep"), "--json"], workspace=workspace)
    assert res.code != 0 and res.out == "" and res.err.count("\n") == 1, res.err
    assert "internal error" not in res.err and "nested deeper" in res.err
    listed = run_cli(["skills", "list", "--json"], workspace=workspace)
    assert json.loads(listed.out) == []
