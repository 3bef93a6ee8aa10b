"""A managed skill keeps its folder: ``skills add`` stores the scripts and references beside
the SKILL.md, per version, and ``{baseDir}`` points at that folder."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from goclaw_skills.store import zip_bytes
from tests.skills_helpers import no_builtin, write_skill


@pytest.fixture
def eng(make_engine: Any) -> Any:
    return make_engine(plugins=no_builtin(embeddings={"provider": "none"}))


def _skill(tmp_path: Path, script: str) -> Path:
    folder = write_skill(
        tmp_path / "src", "pdf-tools", "PDF helpers", body="Run `{baseDir}/scripts/run.sh`.\n"
    ).parent
    (folder / "scripts").mkdir(exist_ok=True)
    run = folder / "scripts" / "run.sh"
    run.write_text(script)
    run.chmod(0o755)
    (folder / "reference.md").write_text("the reference\n")
    return folder


def test_a_managed_skill_keeps_its_base_dir_and_scripts(eng: Any, tmp_path: Path) -> None:
    info = eng.skills.add(_skill(tmp_path, "#!/bin/sh\necho version one\n"), visibility="public")
    assert info["files"] == ["reference.md", "scripts/run.sh"] and info["ignored_files"] == []
    text = eng.skills.use("pdf-tools")
    assert "managed://" not in text
    script = Path(text.split("`")[1])
    assert script.is_file() and os.access(script, os.X_OK)
    assert subprocess.run([str(script)], capture_output=True, text=True, check=True).stdout == "version one\n"
    assert (script.parent.parent / "reference.md").read_text() == "the reference\n"
    # a changed script alone is a new version, in its own folder; the first stays for pins
    info2 = eng.skills.add(_skill(tmp_path, "#!/bin/sh\necho version two\n"))
    assert info2["version"] == info["version"] + 1
    new_script = Path(eng.skills.use("pdf-tools").split("`")[1])
    assert new_script != script and "version two" in new_script.read_text()
    assert "version one" in script.read_text()
    assert eng.skills.add(_skill(tmp_path, "#!/bin/sh\necho version two\n"))["version"] == info2["version"]


def test_a_zip_keeps_the_files_of_its_skill_folder(eng: Any, tmp_path: Path) -> None:
    z = tmp_path / "pack.zip"
    z.write_bytes(
        zip_bytes(
            {
                "pack/zipped/SKILL.md": "---\nname: zipped\ndescription: z\n---\nSee {baseDir}/ref.md\n",
                "pack/zipped/ref.md": "zipped reference",
                "pack/README.md": "not the skill's",
            }
        )
    )
    info = eng.skills.add(z, visibility="public")
    assert info["files"] == ["ref.md"] and info["ignored_files"] == ["pack/README.md"]
    ref = Path(eng.skills.use("zipped").split("See ")[1].strip())
    assert ref.read_text() == "zipped reference"


def test_symlinks_in_a_skill_folder_are_not_followed(eng: Any, tmp_path: Path) -> None:
    folder = _skill(tmp_path, "#!/bin/sh\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("do not copy")
    (folder / "leak.txt").symlink_to(secret)
    info = eng.skills.add(folder, visibility="public")
    assert "leak.txt" in info["ignored_files"] and "leak.txt" not in info["files"]
