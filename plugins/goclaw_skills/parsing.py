"""SKILL.md parsing, folder discovery and lint.

A skill is a folder ``<root>/<slug>/SKILL.md``. The file may start with YAML frontmatter
(``---`` ... ``---``) or JSON frontmatter (the same fences around a JSON object); without
frontmatter the name is the folder slug and the description is empty. CRLF is accepted.
``{baseDir}`` in the body is replaced with the skill folder's absolute path at load time.

Loading is lenient (a skill whose frontmatter name differs from its folder still loads);
:func:`lint_skill` applies the Agent Skills rules strictly. A malformed file (bad YAML,
binary, oversized, a symlink escaping its root, frontmatter over the limits of
:mod:`goclaw_skills.limits`) becomes a :class:`SkillProblem` and is skipped, never fatal and
never hiding the other skills of its tier.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from goclaw_skills.limits import SkillParseError as SkillParseError  # re-exported here too
from goclaw_skills.limits import check_frontmatter_size, load_json, load_yaml

SKILL_FILE = "SKILL.md"
DEFAULT_MAX_BYTES = 256 * 1024
# Agent Skills spec limits (https://agentskills.io/specification), used by lint only.
NAME_MAX = 64
DESCRIPTION_MAX = 1024
BODY_MAX_LINES = 500
AGENT_SKILLS_FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")

_FRONTMATTER = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*(?:\n|\Z)", re.DOTALL)
_NAME_RE = re.compile(r"^[a-z0-9-]+$")


@dataclass
class SkillRecord:
    """One skill as a tier reports it (the record type behind :class:`goclaw.contracts.host.SkillTier`).

    ``path`` is the SKILL.md path (``managed://<slug>`` for database skills); ``content`` is
    the full SKILL.md text (CRLF normalised, ``{baseDir}`` not yet substituted); ``source``
    is the tier name; ``managed`` marks managed-store rows, to which grants apply.
    """

    slug: str
    name: str
    description: str
    content: str
    path: str
    base_dir: str
    source: str = ""
    priority: int = 0
    frontmatter: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    managed: bool = False
    skill_id: str | None = None
    visibility: str | None = None
    owner_id: str | None = None
    version: int | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        """The Agent Skills optional fields kept from the frontmatter."""
        return {k: self.frontmatter[k] for k in AGENT_SKILLS_FIELDS[2:] if k in self.frontmatter}

    def instructions(self) -> str:
        """The full SKILL.md with ``{baseDir}`` replaced by the skill folder."""
        return self.content.replace("{baseDir}", self.base_dir)


@dataclass(frozen=True)
class SkillProblem:
    """A SKILL.md that was skipped: where it is and why."""

    path: str
    reason: str
    source: str = ""

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """Return ``(frontmatter, body)``; raise :class:`SkillParseError` on bad YAML/JSON."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    m = _FRONTMATTER.match(text)
    if m is None:
        return {}, text
    raw, body = m.group(1), text[m.end() :]
    check_frontmatter_size(raw)
    stripped = raw.strip()
    data: Any
    if stripped.startswith("{"):
        try:
            data = load_json(stripped)
        except json.JSONDecodeError as exc:
            raise SkillParseError(f"invalid JSON frontmatter: {exc.msg} (line {exc.lineno})") from None
        except RecursionError:  # belt and braces: the depth check runs first
            raise SkillParseError("frontmatter nested too deeply") from None
    else:
        import yaml

        try:
            data = load_yaml(raw) if stripped else {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 2})" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise SkillParseError(f"invalid YAML frontmatter: {problem}{where}") from None
        except RecursionError:
            raise SkillParseError("frontmatter nested too deeply") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SkillParseError(f"frontmatter must be a mapping, got {type(data).__name__}")
    return {str(k): v for k, v in data.items()}, body


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return " ".join(value.split()) if "\n" in value else value.strip()
    return str(value)


def parse_skill_text(text: str, slug: str, *, path: str, base_dir: str, source: str = "") -> SkillRecord:
    """Parse SKILL.md text into a record (name falls back to the slug)."""
    frontmatter, body = split_frontmatter(text)
    name = _as_text(frontmatter.get("name")) or slug
    description = _as_text(frontmatter.get("description"))
    return SkillRecord(
        slug=slug,
        name=name,
        description=description,
        content=text.replace("\r\n", "\n").replace("\r", "\n"),
        path=path,
        base_dir=base_dir,
        source=source,
        frontmatter=frontmatter,
        body=body,
    )


def decode_skill_bytes(data: bytes, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """UTF-8 text of a SKILL.md, or :class:`SkillParseError` (oversized / binary)."""
    if len(data) > max_bytes:
        raise SkillParseError(f"oversized: {len(data):,} bytes (limit {max_bytes:,})")
    if b"\x00" in data:
        raise SkillParseError("binary file (contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillParseError(f"binary file (not UTF-8 at byte {exc.start})") from None


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


# Parsed files keyed by path: reused while (mtime, size, inode) is unchanged, so a rescan
# after a hot-reload bump only re-parses the files that changed.
ParseCache = dict[str, tuple[tuple[int, int, int, int], SkillRecord | SkillParseError]]


def load_skill_folder(
    folder: Path,
    root: Path,
    *,
    source: str = "",
    max_bytes: int = DEFAULT_MAX_BYTES,
    cache: ParseCache | None = None,
) -> SkillRecord:
    """Load ``folder/SKILL.md``; raise :class:`SkillParseError` with the reason if malformed."""
    skill_file = folder / SKILL_FILE
    real_root = root.resolve()
    real_file = skill_file.resolve()
    if not _inside(real_file, real_root) or not _inside(folder.resolve(), real_root):
        raise SkillParseError(f"symlink escapes its skills root {root} (points to {real_file})")
    if not real_file.is_file():
        raise SkillParseError("SKILL.md is not a regular file")
    st = real_file.stat()
    key = (st.st_mtime_ns, st.st_size, st.st_ino, max_bytes)
    cache_key = str(skill_file)
    # A file touched in the last 2 s is always re-read: two same-size writes can share a
    # coarse timestamp tick.
    fresh = time.time_ns() - st.st_mtime_ns > 2_000_000_000
    if cache is not None and fresh and cache_key in cache and cache[cache_key][0] == key:
        hit = cache[cache_key][1]
        if isinstance(hit, SkillParseError):
            raise hit
        return hit
    try:
        if st.st_size > max_bytes:
            raise SkillParseError(f"oversized: {st.st_size:,} bytes (limit {max_bytes:,})")
        text = decode_skill_bytes(real_file.read_bytes(), max_bytes=max_bytes)
        abs_folder = str(folder.absolute())
        record = parse_skill_text(
            text, folder.name, path=str(skill_file.absolute()), base_dir=abs_folder, source=source
        )
    except SkillParseError as exc:
        if cache is not None:
            cache[cache_key] = (key, exc)
        raise
    if cache is not None:
        cache[cache_key] = (key, record)
    return record


def discover_folder(
    root: Path, *, source: str = "", max_bytes: int = DEFAULT_MAX_BYTES, cache: ParseCache | None = None
) -> Iterator[SkillRecord | SkillProblem]:
    """Every ``<root>/<slug>/SKILL.md`` in slug order; malformed ones as problems.

    A missing root yields nothing. Third-party tiers can reuse this for their own folders.
    """
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        yield SkillProblem(str(root), f"cannot read skills folder: {exc.strerror or exc}", source)
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        folder = Path(entry.path)
        try:
            if not entry.is_dir(follow_symlinks=True):
                continue
            if not (folder / SKILL_FILE).exists() and not (folder / SKILL_FILE).is_symlink():
                continue
            yield load_skill_folder(folder, root, source=source, max_bytes=max_bytes, cache=cache)
        except SkillParseError as exc:
            yield SkillProblem(str(folder / SKILL_FILE), str(exc), source)
        except OSError as exc:
            yield SkillProblem(str(folder / SKILL_FILE), f"cannot read: {exc.strerror or exc}", source)
        except Exception as exc:  # whatever one file does, it never hides the others
            yield SkillProblem(str(folder / SKILL_FILE), f"cannot parse: {type(exc).__name__}: {exc}", source)


def lint_skill(record: SkillRecord) -> list[str]:
    """Agent Skills spec checks; an empty list means the skill is clean."""
    problems: list[str] = []
    fm = record.frontmatter
    name = fm.get("name")
    if not isinstance(name, str) or not name:
        problems.append("frontmatter 'name' is missing")
    else:
        if len(name) > NAME_MAX:
            problems.append(f"name is {len(name)} characters (max {NAME_MAX})")
        if not _NAME_RE.match(name):
            problems.append(f"name {name!r} must use only lowercase letters, digits and '-'")
        elif name.startswith("-") or name.endswith("-") or "--" in name:
            problems.append(f"name {name!r} must not start or end with '-' or contain '--'")
        if name != record.slug:
            problems.append(f"name {name!r} does not match its folder {record.slug!r}")
    desc = fm.get("description")
    if not isinstance(desc, str) or not desc.strip():
        problems.append("frontmatter 'description' is missing or empty")
    elif len(desc) > DESCRIPTION_MAX:
        problems.append(f"description is {len(desc)} characters (max {DESCRIPTION_MAX})")
    lines = record.body.count("\n") + (0 if record.body.endswith("\n") or not record.body else 1)
    if lines >= BODY_MAX_LINES:
        problems.append(f"body is {lines} lines (keep it under {BODY_MAX_LINES})")
    for key in ("compatibility",):
        if key in fm and (not isinstance(fm[key], str) or len(fm[key]) > 500):
            problems.append(f"'{key}' must be a string of at most 500 characters")
    if "metadata" in fm and not isinstance(fm["metadata"], dict):
        problems.append("'metadata' must be a mapping")
    return problems
