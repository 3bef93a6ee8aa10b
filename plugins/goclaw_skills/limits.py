"""Parsing untrusted skills with limits: frontmatter, YAML, JSON and ZIP archives.

A SKILL.md or a skill archive comes from anyone who can write to a skills folder or call
``skills add``. Without limits a 502-byte YAML "billion laughs" (nested aliases) expands to
billions of nodes when the frontmatter is serialised, a 950 kB ZIP inflates a 2 GB SKILL.md
in memory before a size check, and 20,000-deep JSON raises ``RecursionError``, which would take
the whole tier down. The rules here, each a :class:`SkillParseError` naming the limit:

- frontmatter: at most :data:`MAX_FRONTMATTER_CHARS` characters;
- YAML: no anchors or aliases (frontmatter never needs them; this is what makes alias
  expansion impossible), at most :data:`MAX_DEPTH` nested collections and
  :data:`MAX_YAML_EVENTS` parser events, checked on libyaml's event stream before anything
  is built;
- JSON: at most :data:`MAX_DEPTH` nested arrays/objects, checked before ``json.loads``;
- ZIP: the archive at most :data:`MAX_ARCHIVE_BYTES` on disk and :data:`MAX_MEMBERS`
  entries (read from the end record, before the central directory is parsed), no absolute
  or ``..`` member paths, the SKILL.md's declared size within the limit, and the member read
  as a stream that stops one byte past the limit (declared sizes can lie).
"""

from __future__ import annotations

import json
import zipfile
from typing import IO, Any


class SkillParseError(ValueError):
    """A SKILL.md that cannot be loaded; ``str()`` is the reason."""


MAX_FRONTMATTER_CHARS = 64 * 1024
MAX_DEPTH = 32
MAX_YAML_EVENTS = 20_000
MAX_ARCHIVE_BYTES = 32 * 1024 * 1024
MAX_MEMBERS = 2_000


def check_frontmatter_size(raw: str) -> None:
    if len(raw) > MAX_FRONTMATTER_CHARS:
        raise SkillParseError(
            f"frontmatter too large: {len(raw):,} characters (limit {MAX_FRONTMATTER_CHARS:,})"
        )


def load_yaml(raw: str) -> Any:
    """``yaml.safe_load`` of frontmatter, after the event-stream checks (module doc)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: ~10x faster
    depth = 0
    for events, event in enumerate(yaml.parse(raw, Loader=loader), 1):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise SkillParseError("YAML anchors and aliases are not allowed in frontmatter")
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise SkillParseError(f"frontmatter nested deeper than {MAX_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        if events > MAX_YAML_EVENTS:
            raise SkillParseError(f"frontmatter has more than {MAX_YAML_EVENTS:,} YAML nodes")
    return yaml.load(raw, Loader=loader)  # a safe loader (C or Python)


def json_depth(text: str) -> int:
    """Deepest nesting of arrays/objects in ``text`` (strings skipped); linear time."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def load_json(raw: str) -> Any:
    if json_depth(raw) > MAX_DEPTH:
        raise SkillParseError(f"frontmatter nested deeper than {MAX_DEPTH} levels")
    return json.loads(raw)


# --------------------------------------------------------------------------- ZIP archives


def declared_members(fp: IO[bytes]) -> int | None:
    """Entry count from the archive's end record, before ``ZipFile`` parses every entry."""
    try:
        end = zipfile._EndRecData(fp)  # type: ignore[attr-defined]  # stable since Python 2
    except (OSError, zipfile.BadZipFile):
        return None
    finally:
        fp.seek(0)
    return int(end[zipfile._ECD_ENTRIES_TOTAL]) if end else None  # type: ignore[attr-defined]


def open_archive(fp: IO[bytes], size: int) -> zipfile.ZipFile:
    """A ``ZipFile`` over ``fp`` once the archive's size and entry count are within limits."""
    if size > MAX_ARCHIVE_BYTES:
        raise SkillParseError(f"archive too large: {size:,} bytes (limit {MAX_ARCHIVE_BYTES:,})")
    count = declared_members(fp)
    if count is not None and count > MAX_MEMBERS:
        raise SkillParseError(f"archive has {count:,} entries (limit {MAX_MEMBERS:,})")
    try:
        zf = zipfile.ZipFile(fp)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise SkillParseError(f"not a readable ZIP archive: {exc}") from None
    if len(zf.infolist()) > MAX_MEMBERS:
        zf.close()
        raise SkillParseError(f"archive has {len(zf.infolist()):,} entries (limit {MAX_MEMBERS:,})")
    return zf


def read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, max_bytes: int) -> bytes:
    """The member's bytes, never more than ``max_bytes`` held in memory (module doc)."""
    if info.file_size > max_bytes:
        raise SkillParseError(f"oversized: {info.file_size:,} bytes declared (limit {max_bytes:,})")
    try:
        with zf.open(info) as f:
            data = f.read(max_bytes + 1)
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, ValueError, EOFError) as exc:
        raise SkillParseError(f"cannot read {info.filename} from the archive: {exc}") from None
    if len(data) > max_bytes:
        raise SkillParseError(f"oversized: more than {max_bytes:,} bytes (limit {max_bytes:,})")
    return data
