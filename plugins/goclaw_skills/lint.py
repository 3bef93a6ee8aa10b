"""``goclaw skills lint`` (``engine.skills.lint``): the Agent Skills checks of
:func:`goclaw_skills.parsing.lint_skill` and the content scan of :mod:`goclaw_skills.scan`
over skill folders, one :class:`LintResult` each."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from goclaw.errors import NotFoundError
from goclaw_skills.parsing import (
    SKILL_FILE,
    SkillParseError,
    SkillProblem,
    SkillRecord,
    discover_folder,
    lint_skill,
    load_skill_folder,
)
from goclaw_skills.scan import scan_skill_text


@dataclass
class LintResult:
    slug: str
    path: str
    source: str
    problems: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"slug": self.slug, "path": self.path, "source": self.source, "problems": self.problems}


def lint_targets(paths: list[Path], max_bytes: int) -> list[SkillRecord | SkillProblem]:
    """The skills named by ``paths`` (a skill folder, its SKILL.md, or a folder of skills);
    an unreadable SKILL.md becomes a :class:`SkillProblem`, a path that is none of these raises."""
    items: list[SkillRecord | SkillProblem] = []
    for p in paths:
        p = Path(p)
        if p.name == SKILL_FILE:
            p = p.parent
        if (p / SKILL_FILE).exists():
            try:
                items.append(load_skill_folder(p, p.parent, source="path", max_bytes=max_bytes))
            except SkillParseError as exc:
                items.append(SkillProblem(str(p / SKILL_FILE), str(exc), "path"))
        elif p.is_dir():
            items.extend(discover_folder(p, source="path", max_bytes=max_bytes))
        else:
            raise NotFoundError(f"{p}: not a skill folder or a folder of skills")
    return items


def lint_results(items: list[SkillRecord | SkillProblem]) -> list[LintResult]:
    """One result per skill (a problem's reason as its only finding), by path then slug."""
    out: list[LintResult] = []
    for item in items:
        if isinstance(item, SkillProblem):
            out.append(LintResult(Path(item.path).parent.name, item.path, item.source, [item.reason]))
        else:
            scan = [f"content scan: {f}" for f in scan_skill_text(item.content)]
            out.append(LintResult(item.slug, item.path, item.source, lint_skill(item) + scan))
    return sorted(out, key=lambda r: (r.path, r.slug))
