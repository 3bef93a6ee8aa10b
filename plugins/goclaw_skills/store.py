"""The managed skill store: ``skills``, ``skill_versions`` and the two grant tables.

Visibility (the "access mode" ``goclaw skills visibility`` sets): ``public`` = every agent and
user of the tenant; ``private`` = only the owner (``owner_id`` equals the calling user);
``internal`` = only agents with a ``skill_agent_grants`` row or users with a
``skill_user_grants`` row. :func:`list_accessible` says which of them a caller may use. Every
write here also touches ``skills.updated_at`` so that loaders in other processes notice (the loader's
database fingerprint).
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, or_
from sqlmodel import select

from goclaw.contracts.columns import utcnow
from goclaw.errors import NotFoundError, ValidationError
from goclaw_skills.limits import MAX_MEMBERS, open_archive, read_member
from goclaw_skills.parsing import (
    DEFAULT_MAX_BYTES,
    SKILL_FILE,
    SkillParseError,
    decode_skill_bytes,
    split_frontmatter,
)
from goclaw_skills.tables import Skill, SkillAgentGrant, SkillUserGrant, SkillVersion

if TYPE_CHECKING:
    from sqlmodel import Session

    from goclaw.contracts.host import Host

VISIBILITIES = ("private", "internal", "public")
_SLUG_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-"


def normalise_visibility(value: str) -> str:
    v = (value or "").strip().lower()
    if v not in VISIBILITIES:
        raise ValidationError(f"invalid visibility {value!r}: use private, internal or public")
    return v


def validate_slug(slug: str) -> str:
    if not slug or len(slug) > 128 or any(c not in _SLUG_CHARS for c in slug) or slug[0] == "-":
        raise ValidationError(
            f"invalid skill slug {slug!r}: use lowercase letters, digits and '-' (max 128 characters)"
        )
    return slug


@dataclass
class Access:
    """What one (agent, user) may see in the managed store: skill ids and pinned versions."""

    skill_ids: frozenset[str]
    pinned: dict[str, int]


def db_fingerprint(engine: Host) -> tuple[Any, ...]:
    """Changes whenever a managed skill, its visibility or its grants change."""
    with engine.db.session() as s:
        row = s.exec(
            select(func.count(Skill.id), func.max(Skill.updated_at)).where(
                Skill.tenant_id == engine.settings.tenant_id
            )
        ).one()
    return (row[0], str(row[1]))


def list_accessible(engine: Host, agent_id: str | None, user: str | None) -> Access:
    """The active skills the caller (an agent, a user or both) may use."""
    tenant = engine.settings.tenant_id
    user = user or ""
    with engine.db.session() as s:
        agent_granted = select(SkillAgentGrant.skill_id).where(SkillAgentGrant.agent_id == (agent_id or ""))
        user_granted = select(SkillUserGrant.skill_id).where(SkillUserGrant.user_id == user)
        conds = [Skill.visibility == "public"]
        if user:
            conds.append((Skill.visibility == "private") & (Skill.owner_id == user))
            conds.append((Skill.visibility == "internal") & Skill.id.in_(user_granted))  # type: ignore[attr-defined]
        if agent_id:
            conds.append((Skill.visibility == "internal") & Skill.id.in_(agent_granted))  # type: ignore[attr-defined]
        ids = s.exec(
            select(Skill.id)
            .where(Skill.tenant_id == tenant, Skill.status == "active", or_(*conds))
            .distinct()
        ).all()
        pinned: dict[str, int] = {}
        if agent_id:
            for skill_id, version in s.exec(
                select(SkillAgentGrant.skill_id, SkillAgentGrant.pinned_version).where(
                    SkillAgentGrant.agent_id == agent_id,
                    SkillAgentGrant.pinned_version.is_not(None),  # type: ignore[union-attr]
                )
            ).all():
                pinned[skill_id] = int(version)
    return Access(frozenset(ids), pinned)


def version_content(engine: Host, skill_id: str, version: int) -> str | None:
    with engine.db.session() as s:
        row = s.get(SkillVersion, (skill_id, version))
        return row.content if row is not None else None


# --------------------------------------------------------------------------- add


def read_skill_source(path: Path) -> tuple[str, str, list[str]]:
    """``(slug, SKILL.md text, the other files' names)`` from a skill folder, a SKILL.md or a
    ZIP (:mod:`goclaw_skills.store_files` reads those files).

    Everything is read within the limits of :mod:`goclaw_skills.limits`: the
    SKILL.md's size is checked before it is read, an archive is opened only within its size
    and entry limits and its SKILL.md is streamed with a byte cap.
    """
    if not path.exists():
        raise NotFoundError(f"{path}: no such file or folder")
    if path.is_dir():
        skill = path / SKILL_FILE
        if not skill.is_file():
            raise ValidationError(f"{path}: no {SKILL_FILE} in this folder")
        others: list[str] = []
        for p in path.rglob("*"):
            if len(others) >= MAX_MEMBERS:
                others.append("...")
                break
            if p.is_file() and p.name != SKILL_FILE:
                others.append(str(p.relative_to(path)))
        return path.resolve().name, _decode(_read_capped(skill), str(skill)), sorted(others)
    if path.name == SKILL_FILE:
        return path.resolve().parent.name, _decode(_read_capped(path), str(path)), []
    if zipfile.is_zipfile(path):
        return _read_zip(path)
    raise ValidationError(f"{path}: expected a skill folder, a SKILL.md or a .zip archive")


def _read_capped(path: Path) -> bytes:
    """At most ``DEFAULT_MAX_BYTES + 1`` bytes: a huge file is refused, never read whole."""
    with path.open("rb") as f:
        return f.read(DEFAULT_MAX_BYTES + 1)


def _decode(data: bytes, where: str) -> str:
    try:
        text = decode_skill_bytes(data)
        split_frontmatter(text)
    except SkillParseError as exc:
        raise ValidationError(f"{where}: {exc}") from None
    return text


def archive_skill(
    zf: zipfile.ZipFile, path: Path
) -> tuple[PurePosixPath, dict[PurePosixPath, zipfile.ZipInfo]]:
    """The archive's SKILL.md (the shallowest one) and its files by normalised path; unsafe
    paths and archives of several skills are refused."""
    infos = [i for i in zf.infolist() if not i.is_dir()]
    # Windows archives may use backslashes (GoClaw #1103).
    norm = {PurePosixPath(i.filename.replace("\\", "/")): i for i in infos}
    for p in norm:
        if p.is_absolute() or ".." in p.parts or (p.parts and ":" in p.parts[0]):
            raise ValidationError(f"{path}: unsafe path in archive: {p}")
    candidates = sorted((p for p in norm if p.name == SKILL_FILE), key=lambda p: len(p.parts))
    if not candidates:
        raise ValidationError(f"{path}: no {SKILL_FILE} in the archive")
    top = candidates[0]
    if len(candidates) > 1 and len(candidates[1].parts) == len(top.parts):
        raise ValidationError(f"{path}: the archive holds several skills; add them one by one")
    return top, norm


def _read_zip(path: Path) -> tuple[str, str, list[str]]:
    try:
        with path.open("rb") as fp, open_archive(fp, path.stat().st_size) as zf:
            top, norm = archive_skill(zf, path)
            slug = top.parent.name if top.parent.name else path.stem
            data = read_member(zf, norm[top], DEFAULT_MAX_BYTES)
            others = sorted(str(p) for p in norm if p != top)
    except SkillParseError as exc:
        raise ValidationError(f"{path}: {exc}") from None
    return slug, _decode(data, f"{path}!{top}"), others


def add_skill(
    engine: Host,
    text: str,
    slug: str,
    *,
    owner: str = "",
    visibility: str | None = None,
    files_digest: str = "",
) -> tuple[Skill, bool]:
    """Insert a managed skill or add a new version; returns ``(row, created)``.

    An unchanged SKILL.md (same hash, with ``files_digest``, the hash of the skill's other
    files, :meth:`goclaw_skills.store_files.SkillFiles.digest`) adds no version.
    ``visibility=None`` keeps the current one (``private`` for a new skill).
    """
    validate_slug(slug)
    frontmatter, _body = split_frontmatter(text)
    vis = normalise_visibility(visibility) if visibility is not None else None
    digest = hashlib.sha256((text + files_digest).encode("utf-8")).hexdigest()
    name = str(frontmatter.get("name") or slug).strip()
    desc = frontmatter.get("description")
    description = " ".join(desc.split()) if isinstance(desc, str) else ("" if desc is None else str(desc))
    safe_fm = _jsonable(frontmatter)

    def _do(s: Session) -> tuple[Skill, bool]:
        row = s.exec(
            select(Skill).where(Skill.tenant_id == engine.settings.tenant_id, Skill.slug == slug)
        ).first()
        created = row is None
        if row is None:
            row = Skill(
                tenant_id=engine.settings.tenant_id, slug=slug, version=0, visibility=vis or "private"
            )
            row.owner_id = owner
        elif vis is not None:
            row.visibility = vis
        if owner:
            row.owner_id = owner
        if created or row.content_hash != digest or row.status != "active":
            row.version = (row.version or 0) + 1
            row.content, row.frontmatter, row.content_hash = text, safe_fm, digest
            row.name, row.description, row.status = name, description, "active"
            s.add(row)
            s.flush()
            s.add(
                SkillVersion(
                    skill_id=row.id,
                    version=row.version,
                    content=text,
                    frontmatter=safe_fm,
                    content_hash=digest,
                )
            )
        row.updated_at = utcnow()
        s.add(row)
        return row, created

    return engine.db.run_write(_do)


def _jsonable(value: Any) -> Any:
    import json

    return json.loads(json.dumps(value, default=str))


def _skill(s: Session, engine: Host, slug: str) -> Skill:
    row = s.exec(
        select(Skill).where(Skill.tenant_id == engine.settings.tenant_id, Skill.slug == slug)
    ).first()
    if row is None:
        raise NotFoundError(f"no managed skill {slug!r}; add it with: goclaw skills add PATH")
    return row


def grant(
    engine: Host,
    slug: str,
    *,
    agent: str | None = None,
    user: str | None = None,
    pinned_version: int | None = None,
    granted_by: str = "",
) -> None:
    """Grant an agent (optionally pinned to a version) and/or a user (idempotent)."""
    if not agent and not user:
        raise ValidationError("grant needs --agent or --user")
    if pinned_version is not None and not agent:
        raise ValidationError("a pinned version applies to an agent grant (--agent)")

    def _do(s: Session) -> None:
        row = _skill(s, engine, slug)
        if agent:
            a = engine.agents.get(agent, s)
            if pinned_version is not None and s.get(SkillVersion, (row.id, pinned_version)) is None:
                raise ValidationError(
                    f"skill {slug!r} has no version {pinned_version} (latest {row.version})"
                )
            g = s.get(SkillAgentGrant, (row.id, a.id)) or SkillAgentGrant(skill_id=row.id, agent_id=a.id)
            g.pinned_version = pinned_version
            g.granted_by = granted_by or g.granted_by
            s.add(g)
        if user and s.get(SkillUserGrant, (row.id, user)) is None:
            s.add(SkillUserGrant(skill_id=row.id, user_id=user, granted_by=granted_by))
        row.updated_at = utcnow()
        s.add(row)

    engine.db.run_write(_do)


def revoke(engine: Host, slug: str, *, agent: str | None = None, user: str | None = None) -> bool:
    """Remove grants; returns whether anything was removed."""
    if not agent and not user:
        raise ValidationError("revoke needs --agent or --user")

    def _do(s: Session) -> bool:
        row = _skill(s, engine, slug)
        removed = False
        if agent:
            a = engine.agents.get(agent, s)
            g = s.get(SkillAgentGrant, (row.id, a.id))
            if g is not None:
                s.delete(g)
                removed = True
        if user:
            ug = s.get(SkillUserGrant, (row.id, user))
            if ug is not None:
                s.delete(ug)
                removed = True
        row.updated_at = utcnow()
        s.add(row)
        return removed

    return engine.db.run_write(_do)


def set_visibility(engine: Host, slug: str, visibility: str, owner: str | None = None) -> Skill:
    vis = normalise_visibility(visibility)

    def _do(s: Session) -> Skill:
        row = _skill(s, engine, slug)
        row.visibility = vis
        if owner is not None:
            row.owner_id = owner
        row.updated_at = utcnow()
        s.add(row)
        return row

    return engine.db.run_write(_do)


def managed_rows(engine: Host) -> list[Skill]:
    with engine.db.session() as s:
        return list(
            s.exec(select(Skill).where(Skill.tenant_id == engine.settings.tenant_id).order_by(Skill.slug))
        )


def zip_bytes(files: dict[str, str]) -> bytes:
    """Build a ZIP in memory (tests and docs use it)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return buf.getvalue()
