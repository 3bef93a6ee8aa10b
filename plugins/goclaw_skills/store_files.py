"""A managed skill's files beside its SKILL.md: scripts, references, assets.

``skills add`` of a folder or a ZIP keeps the skill folder's other files. The database holds
each version's SKILL.md; the version's whole folder (the SKILL.md and every other file, with
executable bits kept) is written once to
``<workspace>/.goclaw/skills-store/<tenant>/<slug>/<version>/``, and that folder is the skill's
base dir: ``{baseDir}/scripts/run.sh`` in the SKILL.md resolves to a file that exists. The
files count in the version's content hash, so a changed script makes a new version even when
the SKILL.md is unchanged. A version without a folder there (added by another workspace that
shares the database) keeps ``managed://<slug>`` as its base dir.

Read within the limits of :mod:`goclaw_skills.limits`: at most :data:`MAX_MEMBERS` files and
:data:`MAX_ARCHIVE_BYTES` bytes in all; symlinks in a folder are not followed (skipped, and
listed as ignored), and archive paths were checked before (no absolute or ``..`` paths).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from goclaw.errors import ValidationError
from goclaw_skills.limits import MAX_ARCHIVE_BYTES, MAX_MEMBERS, open_archive, read_member
from goclaw_skills.parsing import SKILL_FILE, SkillParseError

if TYPE_CHECKING:
    from goclaw.contracts.host import Host


@dataclass
class SkillFiles:
    """The files of a skill other than its SKILL.md: ``{relative posix path: (bytes, mode)}``,
    and what was left out (``ignored``: symlinks, files outside the skill's folder)."""

    files: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    total: int = 0

    def add(self, name: str, data: bytes, executable: bool) -> None:
        if len(self.files) >= MAX_MEMBERS:
            raise ValidationError(f"a skill has at most {MAX_MEMBERS:,} files")
        self.total += len(data)
        if self.total > MAX_ARCHIVE_BYTES:
            raise ValidationError(f"a skill's files are at most {MAX_ARCHIVE_BYTES:,} bytes in all")
        self.files[name] = (data, 0o755 if executable else 0o644)

    def digest(self) -> str:
        """What the version's content hash adds for these files ("" when there are none)."""
        if not self.files:
            return ""
        h = hashlib.sha256()
        for name in sorted(self.files):
            data, mode = self.files[name]
            h.update(f"{name}\0{mode:o}\0{hashlib.sha256(data).hexdigest()}\n".encode())
        return h.hexdigest()


def read_folder_files(folder: Path) -> SkillFiles:
    """Every regular file under ``folder`` but its SKILL.md; symlinks are not followed."""
    out = SkillFiles()
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        if p.is_symlink():  # rglob does not descend into a symlinked folder either
            out.ignored.append(rel)
        elif p.is_file() and rel != SKILL_FILE:
            with p.open("rb") as f:
                data = f.read(MAX_ARCHIVE_BYTES + 1)
            out.add(rel, data, bool(p.stat().st_mode & stat.S_IXUSR))
    return out


def read_zip_files(
    zf: zipfile.ZipFile, top: PurePosixPath, norm: dict[PurePosixPath, zipfile.ZipInfo]
) -> SkillFiles:
    """The archive's files in the folder of its SKILL.md ``top`` (others are ignored)."""
    out = SkillFiles()
    for p in sorted(norm):
        if p == top:
            continue
        if top.parent.parts and p.parts[: len(top.parent.parts)] != top.parent.parts:
            out.ignored.append(str(p))
            continue
        info = norm[p]
        try:
            data = read_member(zf, info, MAX_ARCHIVE_BYTES - out.total)
        except SkillParseError as exc:
            raise ValidationError(f"{p}: {exc}") from None
        out.add(p.relative_to(top.parent).as_posix(), data, bool((info.external_attr >> 16) & stat.S_IXUSR))
    return out


def read_skill_files(path: Path) -> SkillFiles:
    """The files of the skill at ``path`` (a folder, a SKILL.md alone: none, or a ZIP)."""
    if path.is_dir():
        return read_folder_files(path)
    if path.name == SKILL_FILE or not zipfile.is_zipfile(path):
        return SkillFiles()
    from goclaw_skills.store import archive_skill

    with path.open("rb") as fp, open_archive(fp, path.stat().st_size) as zf:
        top, norm = archive_skill(zf, path)
        return read_zip_files(zf, top, norm)


def version_folder(engine: Host, slug: str, version: int) -> Path:
    return engine.workspace / ".goclaw" / "skills-store" / engine.settings.tenant_id / slug / str(version)


def write_version(engine: Host, slug: str, version: int, text: str, files: SkillFiles) -> Path:
    """The version's folder with its SKILL.md and files, written once (a temporary folder
    renamed into place, so a reader never sees half of it)."""
    folder = version_folder(engine, slug, version)
    if (folder / SKILL_FILE).is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f".{version}.{secrets.token_hex(4)}.tmp")
    try:
        for name, (data, mode) in files.files.items():
            target = tmp / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            target.chmod(mode)
        tmp.mkdir(parents=True, exist_ok=True)
        (tmp / SKILL_FILE).write_text(text, encoding="utf-8")
        if folder.exists():  # a leftover without its SKILL.md
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


def base_dir(engine: Host, slug: str, version: int | None) -> str | None:
    """The version's folder when this workspace has it, else None (``managed://<slug>``)."""
    if version is None:
        return None
    folder = version_folder(engine, slug, version)
    return str(folder.resolve()) if (folder / SKILL_FILE).is_file() else None
