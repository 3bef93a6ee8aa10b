"""The memory write API: add, correct, delete and list memories.

A memory added through the API is appended to the scope's dated file, ``memory/YYYY-MM-DD.md``
of the agent (no user) or of ``users/<U>/``, as one entry:

    <!-- goclaw-memory id=mem_3f9a1c2b7d added=2026-12-03T03:55:00Z tags=deploy,prefs meta={...} -->
    The user prefers deploys on Thursdays.
    (blank line)

The marker line keeps the entry's stable id, time, tags and metadata out of the way of a
Markdown reader; the text stays plain Markdown that people and the memory flush also edit.
Every write holds a lock on the scope's ``memory/`` folder (across processes), rewrites the
file atomically (temp file + rename) and re-indexes that scope at once, so the next search
sees it. ``correct`` and ``delete`` take an entry id, a ``memory_search`` hit id, or a path and
a line range; a target outside the writer's scope (another user's, or the agent level from a
user's writer) is refused.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goclaw.errors import NotFoundError, PermissionDeniedError, ValidationError
from goclaw_memory import entries as E
from goclaw_memory.entries import MemoryEntry
from goclaw_memory.hit_ids import memory_hit_id, parse_memory_hit_id, split_line_locator
from goclaw_memory.paths import (
    atomic_write,
    own_scope,
    private_dirs,
    resolve_memory_path,
    scope_files,
    scope_root,
    validate_user_id,
    writable_memory_path,
)
from goclaw_text.redaction import redact_for

if TYPE_CHECKING:
    from goclaw.contracts.host import Host
    from goclaw.contracts.store import Agent

_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def _scope_lock(folder: Path) -> Iterator[None]:
    """One writer per scope folder: a thread lock plus ``flock`` on the folder (other processes)."""
    private_dirs(folder)
    key = str(folder.resolve())
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: the thread lock only
            yield
            return
        fd = os.open(key, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


class MemoryWriter:
    """Writes one agent's memory, at the agent level or for one user (``engine.memory.writer``)."""

    def __init__(self, engine: Host) -> None:
        self.engine = engine

    # ------------------------------------------------------------------ helpers
    def _scope(self, agent: str | Agent, user: str | None, *, write: bool = False) -> tuple[Agent, str, Path]:
        a = self.engine.memory._agent(agent)
        uid = validate_user_id(user) if user else ""
        agent_dir = self.engine.agent_dir(a)
        if write and not own_scope(agent_dir, uid):
            # users/<U> (or users/) is a symlink: writing through it would land in another
            # user's memory, as reading through it would (refused the same way)
            raise PermissionDeniedError(f"user {uid!r}: its folder is a symlink (symlinked user folder)")
        return a, uid, agent_dir

    def _redact(self, text: str) -> str:
        # The project's redactor: a plugin's "redaction" service, else goclaw_text.redaction's.
        return redact_for(self.engine, text)

    def _reindex(self, a: Agent, uid: str) -> None:
        self.engine.memory.index(a, uid or None, scopes=[uid])

    def _target(
        self,
        a: Agent,
        uid: str,
        agent_dir: Path,
        id: str | None,
        path: str | None,
        lines: tuple[int, int] | None,
    ) -> tuple[Path, str, int, int, bool]:
        """``(file, agent-relative path, first line, last line (0-based), is_entry)``."""
        if id and id.startswith("mem_"):
            for entry in self.list(a, uid or None):
                if entry.id == id:
                    return agent_dir / entry.path, entry.path, entry.start_line - 1, entry.end_line - 1, True
            raise NotFoundError(f"no memory {id!r} in this scope")
        if id:
            ref = parse_memory_hit_id(id, a.id, uid or None)
            if ref.kind != "m":
                raise ValidationError(f"{id!r} is not a memory file id")
            if ref.user_id != uid:
                raise PermissionDeniedError(f"memory id {id!r} belongs to another scope")
            path, start, end = split_line_locator(ref.locator)
            lines = (start, end)
        if not path or lines is None:
            raise ValidationError("give a memory id, or a path with from/to lines")
        owner, rel, abs_path = resolve_memory_path(agent_dir, path, uid or None)
        if owner != uid:
            raise PermissionDeniedError(f"{path!r} is outside this writer's scope")
        start, end = lines
        total = len(E.read_lines(abs_path))
        if start < 1 or end < start or end > total:
            raise ValidationError(f"bad line range {start}..{end} for {rel} ({total} lines)")
        # A range over API entries: exactly one entry with its marker (plus blank lines) is that
        # entry; a range over several entries, or an entry's marker and other text, would lose
        # ids, so it is refused.
        entries = [e for e in self.list(a, uid or None) if e.path == rel]
        touched = [e for e in entries if e.start_line <= end and e.end_line >= start]
        if len(touched) > 1:
            ids = ", ".join(e.id for e in sorted(touched, key=lambda e: e.start_line))
            raise ValidationError(
                f"lines {start}-{end} of {rel} span {len(touched)} memories ({ids}); use one id"
            )
        if touched and start <= touched[0].start_line:
            e = touched[0]
            text_lines = E.read_lines(abs_path)
            outside = [
                i
                for i in range(start, end + 1)
                if not e.start_line <= i <= e.end_line and text_lines[i - 1].strip()
            ]
            if outside:
                raise ValidationError(
                    f"lines {start}-{end} of {rel} cover memory {e.id} and other text; use its id"
                )
            return abs_path, rel, e.start_line - 1, e.end_line - 1, True
        return abs_path, rel, start - 1, end - 1, False

    # ------------------------------------------------------------------ API
    def add(
        self,
        agent: str | Agent,
        text: str,
        user: str | None = None,
        *,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        day: date | str | None = None,
    ) -> MemoryEntry:
        """Append a memory to ``memory/YYYY-MM-DD.md`` of the scope (today, UTC) and index it.

        A memory identical to one already in the scope (see :meth:`_identical`) is stored once:
        the existing entry comes back, with ``existing`` set, and nothing is written."""
        a, uid, agent_dir = self._scope(agent, user, write=True)
        body = self._redact(E.clean_text(text))
        clean_tags, meta = E.clean_tags(tags), E.clean_meta(metadata)
        when = E.now()
        if day is None:
            day = when.date()
        elif isinstance(day, str):
            try:
                day = date.fromisoformat(day)
            except ValueError:
                raise ValidationError(f"bad date {day!r}: use YYYY-MM-DD") from None
        # Refuses a dated file or memory/ folder that is a symlink leading out of the scope.
        rel, abs_path = writable_memory_path(agent_dir, uid, f"memory/{day.isoformat()}.md")
        folder = abs_path.parent
        entry_id = "mem_" + secrets.token_hex(5)
        added = when.isoformat().replace("+00:00", "Z")
        with _scope_lock(folder):
            same = self._identical(a, uid, body, clean_tags, meta)
            if same is not None:
                return same
            lines = E.read_lines(abs_path)
            if lines and lines[-1].strip():
                lines.append("")
            start = len(lines) + 1
            lines.append(E.marker(entry_id, added, clean_tags, meta, None))
            lines.extend(body.split("\n"))
            end = len(lines)
            atomic_write(abs_path, "\n".join(lines) + "\n")
            self._reindex(a, uid)
        return MemoryEntry(
            entry_id, rel, start, end, added, body, "user" if uid else "agent", clean_tags, meta
        )

    def correct(
        self,
        agent: str | Agent,
        text: str,
        user: str | None = None,
        *,
        id: str | None = None,
        path: str | None = None,
        lines: tuple[int, int] | None = None,
    ) -> dict[str, Any]:
        """Replace a memory (an entry's text, or lines of a file) with ``text``; re-index."""
        a, uid, agent_dir = self._scope(agent, user, write=True)
        body = self._redact(E.clean_text(text))
        folder = scope_root(agent_dir, uid) / "memory"
        with _scope_lock(folder):
            abs_path, rel, start, end, is_entry = self._target(a, uid, agent_dir, id, path, lines)
            current = E.read_lines(abs_path)
            new = body.split("\n")
            if is_entry:
                info = E.parse_marker(current[start]) or {}
                marker = E.marker(
                    info["id"], info.get("added", ""), info["tags"], info["metadata"], E.iso(E.now())
                )
                current[start : end + 1] = [marker, *new]
                first, last = start + 2, start + 1 + len(new)
            else:
                current[start : end + 1] = new
                first, last = start + 1, start + len(new)
            atomic_write(abs_path, "\n".join(current) + "\n")
            self._reindex(a, uid)
        return {
            "path": rel,
            "start_line": first,
            "end_line": last,
            "id": self._hit_id(a, uid, rel, first, last),
        }

    def delete(
        self,
        agent: str | Agent,
        user: str | None = None,
        *,
        id: str | None = None,
        path: str | None = None,
        lines: tuple[int, int] | None = None,
    ) -> dict[str, Any]:
        """Remove a memory (an entry, or lines of a file); a file left empty is removed. Re-index."""
        a, uid, agent_dir = self._scope(agent, user, write=True)
        folder = scope_root(agent_dir, uid) / "memory"
        with _scope_lock(folder):
            abs_path, rel, start, end, is_entry = self._target(a, uid, agent_dir, id, path, lines)
            current = E.read_lines(abs_path)
            removed = current[start : end + 1]
            stop = end + 1
            if is_entry and stop < len(current) and not current[stop].strip():
                stop += 1  # the blank line that separated it from the next entry
            del current[start:stop]
            if any(line.strip() for line in current):
                atomic_write(abs_path, "\n".join(current) + "\n")
            else:
                abs_path.unlink()
            self._reindex(a, uid)
        return {"path": rel, "start_line": start + 1, "end_line": end + 1, "removed_lines": len(removed)}

    def list(
        self, agent: str | Agent, user: str | None = None, *, tag: str | None = None, limit: int | None = None
    ) -> list[MemoryEntry]:
        """Entries added through this API in the scope's files, newest first."""
        if limit is not None and limit < 1:
            raise ValidationError(f"limit must be at least 1 (got {limit})")
        _a, uid, agent_dir = self._scope(agent, user)
        found: list[MemoryEntry] = []
        for f in scope_files(agent_dir, uid):
            lines = E.read_lines(f.abs_path)
            for i, line in enumerate(lines):
                info = E.parse_marker(line) if line.startswith("<!-- goclaw-memory ") else None
                if info is None:
                    continue
                end = E.entry_span(lines, i)
                entry = MemoryEntry(
                    id=info["id"],
                    path=f.path,
                    start_line=i + 1,
                    end_line=end + 1,
                    added=info.get("added", ""),
                    text="\n".join(lines[i + 1 : end + 1]),
                    scope="user" if uid else "agent",
                    tags=info["tags"],
                    metadata=info["metadata"],
                    corrected=info.get("corrected"),
                )
                if tag is None or tag in entry.tags:
                    found.append(entry)
        found.sort(key=lambda e: (e.added, e.path, e.start_line), reverse=True)
        return found[:limit] if limit else found

    def _identical(
        self, a: Agent, uid: str, body: str, tags: list[str], meta: dict[str, Any]
    ) -> MemoryEntry | None:
        """The scope's entry identical to a new one, if any: the same text once cleaned and
        redacted as ``add`` stores it, compared with runs of white space collapsed (case
        counts), the same tags in any order and the same metadata, on any day."""
        words = body.split()
        for entry in self.list(a, uid or None):
            if entry.text.split() == words and set(entry.tags) == set(tags) and entry.metadata == meta:
                entry.existing = True
                return entry
        return None

    def _hit_id(self, a: Agent, uid: str, rel: str, first: int, last: int) -> str:
        return memory_hit_id("m", a.id, uid, f"{rel}#L{first}-L{last}")
