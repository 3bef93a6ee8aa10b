"""The five skill tiers, each registered by its own plugin.

1 ``workspace`` ``<workspace>/skills``; 2 ``project`` ``<workspace>/.agents/skills``;
3 ``personal`` ``~/.agents/skills``; 4 ``global`` ``~/.goclaw/skills`` plus the managed store
(the ``skills`` table; grants apply to those rows); 5 ``builtin`` (shipped in this package).
``~`` is read at call time, so a changed ``HOME`` is honoured. A third-party plugin adds a
tier by returning any object with ``name``, ``priority``, ``roots(engine)`` and
``discover(engine)`` from ``goclaw_skill_tiers``; :func:`discover_folder` does the folder
scanning for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goclaw_skills import store_files
from goclaw_skills.parsing import (
    DEFAULT_MAX_BYTES,
    ParseCache,
    SkillParseError,
    SkillProblem,
    SkillRecord,
    discover_folder,
    parse_skill_text,
)

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

BUILTIN_ROOT = Path(__file__).resolve().parent / "builtin"


def max_skill_bytes(engine: Host) -> int:
    try:
        return int(engine.plugin_settings("skills").max_skill_bytes)
    except Exception:  # the skills plugin is disabled: tiers still work with the default
        return DEFAULT_MAX_BYTES


class FolderTier:
    """A tier that is one folder of ``<slug>/SKILL.md`` sub-folders."""

    def __init__(self, name: str, priority: int, root: Callable[[Host], Path]) -> None:
        self.name = name
        self.priority = priority
        self._root = root
        self._cache: ParseCache = {}

    def roots(self, engine: Host) -> list[Path]:
        return [self._root(engine)]

    def discover(self, engine: Host) -> Iterable[SkillRecord | SkillProblem]:
        limit = max_skill_bytes(engine)
        for root in self.roots(engine):
            items = list(discover_folder(root, source=self.name, max_bytes=limit, cache=self._cache))
            seen = {i.path for i in items}
            self._cache = {k: v for k, v in self._cache.items() if k in seen}
            yield from items

    def __repr__(self) -> str:
        return f"<skill tier {self.name} (priority {self.priority})>"


class GlobalTier(FolderTier):
    """Tier 4: ``~/.goclaw/skills`` first, then the managed store rows (source ``managed``)."""

    def __init__(self) -> None:
        super().__init__("global", 4, lambda _e: Path.home() / ".goclaw" / "skills")

    def discover(self, engine: Host) -> Iterable[SkillRecord | SkillProblem]:
        yield from super().discover(engine)
        yield from managed_records(engine)


def managed_records(engine: Host) -> list[SkillRecord | SkillProblem]:
    """Active rows of the ``skills`` table as records (the database part of tier 4)."""
    from sqlmodel import select

    from goclaw_skills.tables import Skill

    out: list[SkillRecord | SkillProblem] = []
    with engine.db.session() as s:
        rows = s.exec(
            select(Skill)
            .where(Skill.tenant_id == engine.settings.tenant_id, Skill.status == "active")
            .order_by(Skill.slug)
        ).all()
    for row in rows:
        folder = store_files.base_dir(engine, row.slug, row.version)
        out.append(managed_record(row.slug, row.content, row, base_dir=folder))
    return out


def managed_record(
    slug: str, content: str, row: Any, version: int | None = None, base_dir: str | None = None
) -> SkillRecord | SkillProblem:
    """A managed row as a record; ``base_dir``: the version's folder
    (:mod:`goclaw_skills.store_files`), else ``managed://<slug>``."""
    where = f"managed://{slug}"
    try:
        record = parse_skill_text(content, slug, path=where, base_dir=base_dir or where, source="managed")
    except SkillParseError as exc:
        return SkillProblem(where, str(exc), "managed")
    except Exception as exc:  # one bad row never hides the other managed skills
        return SkillProblem(where, f"cannot parse: {type(exc).__name__}: {exc}", "managed")
    record.managed = True
    record.skill_id = row.id
    record.visibility = row.visibility
    record.owner_id = row.owner_id
    record.version = version if version is not None else row.version
    return record


def workspace_tier() -> FolderTier:
    return FolderTier("workspace", 1, lambda e: e.workspace / "skills")


def project_tier() -> FolderTier:
    return FolderTier("project", 2, lambda e: e.workspace / ".agents" / "skills")


def personal_tier() -> FolderTier:
    return FolderTier("personal", 3, lambda _e: Path.home() / ".agents" / "skills")


def builtin_tier() -> FolderTier:
    return FolderTier("builtin", 5, lambda _e: BUILTIN_ROOT)
