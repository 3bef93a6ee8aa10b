"""Which files are memory, and confining reads/writes to them.

Per agent folder (``engine.agent_dir(agent)``):

* agent level (``user_id = ""``): ``MEMORY.md`` (or ``memory.md`` when ``MEMORY.md`` is missing)
  and ``memory/**/*.md``;
* per user (``user_id = U``): ``users/U/MEMORY.md`` (or ``memory.md``) and ``users/U/memory/**/*.md``.

``.git``, ``node_modules`` and hidden folders are skipped; symlinks that leave the scope's
folder are ignored. A user's folder is never reached through a symlink (``users/mallory ->
bob`` would hand bob's memory to mallory), and agent-level memory never resolves into
``users/``. Paths stored in the index are relative to the agent folder with POSIX
separators, so a hit's ``path`` can be handed straight back to ``memory_get``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from goclaw.contracts.fsutil import atomic_write_text
from goclaw.contracts.tools import check_user_id
from goclaw.errors import NotFoundError, PermissionDeniedError, ValidationError

EXCLUDED_DIRS = frozenset({".git", "node_modules", "__pycache__"})
USERS_DIR = "users"


@dataclass(frozen=True)
class MemoryFile:
    """A memory file found on disk."""

    user_id: str  # "" = agent level
    path: str  # relative to the agent folder, POSIX
    abs: str  # absolute path as a string (no Path object per file: indexing lists 10,000s)

    @property
    def abs_path(self) -> Path:
        return Path(self.abs)


def validate_user_id(user: str) -> str:
    """``user`` when it is a valid user id (:func:`goclaw.contracts.tools.check_user_id`)."""
    return check_user_id(user)


def scope_root(agent_dir: Path, user_id: str) -> Path:
    return agent_dir if not user_id else agent_dir / USERS_DIR / user_id


def scope_prefix(user_id: str) -> str:
    """The path prefix of a scope's files relative to the agent folder."""
    return "" if not user_id else f"{USERS_DIR}/{user_id}/"


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    return True


def own_scope(agent_dir: Path, user_id: str) -> bool:
    """Whether the scope's folder is its own: for a user, neither ``users/`` nor ``users/U``
    is a symlink (a symlinked user folder is never followed, for reads, indexing or writes)."""
    if not user_id:
        return True
    base = agent_dir / USERS_DIR
    return not base.is_symlink() and not (base / user_id).is_symlink()


def in_scope(path: Path, root: Path, user_id: str) -> bool:
    """``path`` resolves inside the scope ``root``; for the agent level, not into ``users/``."""
    if not _inside(path, root):
        return False
    return bool(user_id) or not _inside(path, root / USERS_DIR)


def scope_files(agent_dir: Path, user_id: str) -> list[MemoryFile]:
    """The memory files of one scope, sorted by path."""
    root = scope_root(agent_dir, user_id)
    prefix = scope_prefix(user_id)
    found: list[MemoryFile] = []
    if not root.is_dir() or not own_scope(agent_dir, user_id):
        return found
    for name in ("MEMORY.md", "memory.md"):
        candidate = root / name
        # The fallback name only counts when MEMORY.md is missing. On a
        # case-insensitive file system both names are the same file: take it once.
        if candidate.is_file() and in_scope(candidate, root, user_id):
            found.append(MemoryFile(user_id, prefix + name, str(candidate)))
            break
    mem_dir = root / "memory"
    if mem_dir.is_dir() and not mem_dir.is_symlink():
        _walk(str(mem_dir), "memory/", user_id, prefix, root, found)
    found.sort(key=lambda f: f.path)
    return found


def _walk(folder: str, rel: str, user_id: str, prefix: str, root: Path, found: list[MemoryFile]) -> None:
    """``*.md`` files under ``folder`` (scandir: no stat per file). Folder symlinks are not
    followed; a file symlink counts only when it points to a file inside the scope."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if name.startswith("."):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                if name not in EXCLUDED_DIRS:
                    _walk(entry.path, f"{rel}{name}/", user_id, prefix, root, found)
                continue
            if not name.endswith(".md"):
                continue
            if entry.is_symlink():
                target = Path(entry.path)
                if not target.is_file() or not in_scope(target, root, user_id):
                    continue
            elif not entry.is_file(follow_symlinks=False):
                continue
        except OSError:
            continue
        found.append(MemoryFile(user_id, prefix + rel + name, entry.path))


def user_ids(agent_dir: Path) -> list[str]:
    """Users that have a folder under ``users/``."""
    base = agent_dir / USERS_DIR
    if not base.is_dir() or base.is_symlink():
        return []
    return sorted(
        p.name
        for p in base.iterdir()
        if p.is_dir() and not p.is_symlink() and not p.name.startswith(".") and _inside(p, base)
    )


def is_memory_path(rel: str) -> bool:
    """Whether a scope-relative POSIX path names a memory file."""
    parts = PurePosixPath(rel).parts
    if not parts or not rel.endswith(".md"):
        return False
    if len(parts) == 1:
        return parts[0] in {"MEMORY.md", "memory.md"}
    if parts[0] != "memory":
        return False
    return all(p not in EXCLUDED_DIRS and not p.startswith(".") for p in parts[1:])


def classify(agent_dir: Path, abs_path: Path) -> tuple[str, str] | None:
    """``(user_id, agent-relative path)`` when ``abs_path`` is a memory file, else None."""
    try:
        rel = abs_path.relative_to(agent_dir).as_posix()
    except ValueError:
        return None
    parts = PurePosixPath(rel).parts
    if len(parts) >= 3 and parts[0] == USERS_DIR:
        user = parts[1]
        if user.startswith("."):
            return None
        inner = "/".join(parts[2:])
        return (user, rel) if is_memory_path(inner) else None
    return ("", rel) if is_memory_path(rel) else None


def resolve_memory_path(agent_dir: Path, path: str, user_id: str | None) -> tuple[str, str, Path]:
    """Confine ``path`` (relative to the agent folder) to the memory roots a caller may read.

    Without a user only agent-level memory is reachable; with one, agent level plus that user's.
    A path may also be given relative to the user's folder (``memory/x.md`` for a user's file
    is tried in the user's scope first). Returns ``(user_id, rel_path, abs_path)``.
    Refuses absolute paths, ``..``, non-memory files and symlinks that escape.
    """
    if not path or "\x00" in path:
        raise ValidationError("a memory path is required")
    norm = path.replace("\\", "/")
    if norm.startswith("/") or re.match(r"^[A-Za-z]:", norm):
        raise PermissionDeniedError(f"{path!r}: absolute paths are not allowed; use a memory path")
    parts = [p for p in norm.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise PermissionDeniedError(f"{path!r}: '..' is not allowed in memory paths")
    rel = "/".join(parts)
    candidates: list[tuple[str, str]] = []
    if len(parts) >= 3 and parts[0] == USERS_DIR:
        owner = parts[1]
        if user_id and owner == user_id:
            candidates.append((owner, rel))
    else:
        if user_id:
            candidates.append((user_id, f"{USERS_DIR}/{user_id}/{rel}"))
        candidates.append(("", rel))
    if not candidates:
        raise PermissionDeniedError(f"{path!r} is outside the memory this caller may read")
    symlinked = False
    for owner, full_rel in candidates:
        inner = full_rel[len(scope_prefix(owner)) :]
        if not is_memory_path(inner):
            continue
        abs_path = agent_dir / full_rel
        root = scope_root(agent_dir, owner)
        if not own_scope(agent_dir, owner):
            symlinked = True
            continue
        if abs_path.exists() and not in_scope(abs_path, root, owner):
            raise PermissionDeniedError(f"{path!r} leaves the memory folder (symlink)")
        if abs_path.is_file():
            return owner, full_rel, abs_path
    if symlinked and len(candidates) == 1:
        raise PermissionDeniedError(f"{path!r} leaves the memory folder (symlinked user folder)")
    if not any(is_memory_path(fr[len(scope_prefix(o)) :]) for o, fr in candidates):
        raise PermissionDeniedError(f"{path!r} is not a memory file (MEMORY.md, memory.md or memory/**/*.md)")
    raise NotFoundError(f"memory file {path!r} does not exist")


def writable_memory_path(agent_dir: Path, user_id: str, path: str) -> tuple[str, Path]:
    """Confine a path the flush's file tools write to one scope's memory files.

    ``path`` is relative to the scope's folder (``memory/2026-01-01.md``, ``MEMORY.md``); a
    leading ``users/<user>/`` of the same scope is accepted too. Returns the agent-relative path
    and the absolute path (which may not exist yet).
    """
    if not path or "\x00" in path:
        raise ValidationError("a path is required")
    norm = path.replace("\\", "/")
    if norm.startswith("/") or re.match(r"^[A-Za-z]:", norm):
        raise PermissionDeniedError(f"{path!r}: absolute paths are not allowed")
    parts = [p for p in norm.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise PermissionDeniedError(f"{path!r}: '..' is not allowed")
    prefix_parts = [USERS_DIR, user_id] if user_id else []
    if user_id and parts[:2] == prefix_parts:
        parts = parts[2:]
    inner = "/".join(parts)
    if not is_memory_path(inner):
        raise PermissionDeniedError(
            f"{path!r}: only MEMORY.md and memory/**/*.md may be written by the memory flush"
        )
    root = scope_root(agent_dir, user_id)
    abs_path = root / inner
    if not own_scope(agent_dir, user_id):
        raise PermissionDeniedError(f"{path!r} leaves the memory folder (symlinked user folder)")
    # Refuse when any existing component is a symlink leading out of the scope.
    probe = abs_path
    while not probe.exists() and probe != root and probe.parent != probe:
        probe = probe.parent
    if probe.exists() and not in_scope(probe, root, user_id) and root.exists():
        raise PermissionDeniedError(f"{path!r} leaves the memory folder (symlink)")
    return scope_prefix(user_id) + inner, abs_path


PRIVATE_FILE = 0o600  # a memory file goclaw creates: owner only, whatever the umask
PRIVATE_DIR = 0o700  # a folder goclaw creates for memory files


def private_dirs(folder: Path) -> None:
    """Create ``folder`` and its missing parents owner-only (``mkdir -p`` gives parents the
    umask's default, readable by every local user)."""
    missing = []
    while not folder.exists() and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir(mode=PRIVATE_DIR, exist_ok=True)


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (:func:`goclaw.contracts.fsutil.atomic_write_text`).
    Memory is personal data: a new file is private (0600) and so are the folders made for it
    (0700); an existing file keeps its mode (its owner chose it)."""
    private_dirs(path.parent)
    atomic_write_text(path, text, mode=None if path.exists() else PRIVATE_FILE)
