"""The database store of context files and its name rules (spec §4, issue 3 §3)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from goclaw.errors import NotFoundError, ValidationError
from goclaw.store.models import AgentContextFile, UserContextFile
from goclaw.store.types import utcnow
from goclaw.types import ContextFile
from sqlmodel import col, select

if TYPE_CHECKING:
    from goclaw.engine import Engine
    from goclaw.store.models import Agent
    from goclaw.types import PromptContext
    from sqlmodel import Session

# Spec §1 file names, in the spec's order (DECISIONS.md, order of files).
KNOWN_FILES: tuple[str, ...] = (
    "AGENTS.md",
    "SOUL.md",
    "TOOLS.md",
    "IDENTITY.md",
    "USER.md",
    "BOOTSTRAP.md",
    "USER_PREDEFINED.md",
)
_MD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\- ]{0,120}\.md$")


def validate_file_name(name: str) -> str:
    """Accept a known context-file name or a plain ``*.md`` name; nothing that could be a path."""
    if not name or "\x00" in name:
        raise ValidationError("invalid context file name: empty or contains a NUL byte")
    if "/" in name or "\\" in name or ".." in name or name.startswith("."):
        raise ValidationError(
            f"invalid context file name {name!r}: no path separators, '..' or leading dot allowed"
        )
    if name not in KNOWN_FILES and not _MD_NAME.match(name):
        raise ValidationError(
            f"invalid context file name {name!r}: use one of {', '.join(KNOWN_FILES)} or a NAME.md file"
        )
    return name


@dataclass
class FileInfo:
    name: str
    chars: int
    level: str  # agent | user
    updated_at: datetime

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "chars": self.chars,
            "level": self.level,
            "updated_at": self.updated_at.isoformat(),
        }


def _order(name: str) -> tuple[int, str]:
    return (KNOWN_FILES.index(name) if name in KNOWN_FILES else len(KNOWN_FILES), name)


class ContextFileStore:
    """``engine.files``: read and write agent-level and per-user context files."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @property
    def max_file_chars(self) -> int:
        return int(self.engine.plugin_settings("context_files").max_file_chars)

    # ------------------------------------------------------------------ reads
    def get(self, agent: str, name: str, user: str | None = None) -> str:
        validate_file_name(name)
        with self.engine.db.session() as s:
            a = self.engine.agents.get(agent, s)
            row = self._row(s, a, name, user)
            if row is None:
                where = f"user {user!r} of agent {agent!r}" if user else f"agent {agent!r}"
                raise NotFoundError(f"{name} does not exist for {where}")
            return row.content

    def read(self, agent: Agent, name: str, user: str | None, session: Session) -> str | None:
        row = self._row(session, agent, name, user)
        return None if row is None else row.content

    def list(self, agent: str, user: str | None = None) -> list[FileInfo]:
        with self.engine.db.session() as s:
            a = self.engine.agents.get(agent, s)
            if user is None:
                rows: list[Any] = list(s.exec(select(AgentContextFile).where(AgentContextFile.agent_id == a.id)))
            else:
                rows = list(
                    s.exec(
                        select(UserContextFile).where(
                            UserContextFile.agent_id == a.id, UserContextFile.user_id == user
                        )
                    )
                )
        level = "user" if user is not None else "agent"
        infos = [FileInfo(r.file_name, len(r.content), level, r.updated_at) for r in rows]
        return sorted(infos, key=lambda i: _order(i.name))

    def users(self, agent: str) -> list[str]:
        with self.engine.db.session() as s:
            a = self.engine.agents.get(agent, s)
            return sorted(
                set(s.exec(select(UserContextFile.user_id).where(UserContextFile.agent_id == a.id)))
            )

    # ------------------------------------------------------------------ writes
    def set(self, agent: str, name: str, content: str, user: str | None = None) -> None:
        """Write a file (the admin path). Content is stored exactly as given."""
        validate_file_name(name)
        if len(content) > self.max_file_chars:
            raise ValidationError(
                f"{name} is {len(content):,} characters; the limit is {self.max_file_chars:,} "
                "([plugins.context_files] max_file_chars)"
            )
        if "\x00" in content:
            raise ValidationError(f"{name} contains a NUL byte; context files must be text")

        def _do(session: Session) -> None:
            a = self.engine.agents.get(agent, session)
            self.write_row(session, a, name, content, user)

        self.engine.db.run_write(_do)

    def write_row(self, session: Session, agent: Agent, name: str, content: str, user: str | None) -> None:
        row = self._row(session, agent, name, user)
        if row is None:
            row = (
                UserContextFile(agent_id=agent.id, user_id=user, file_name=name)
                if user is not None
                else AgentContextFile(agent_id=agent.id, file_name=name)
            )
        row.content = content
        row.updated_at = utcnow()
        session.add(row)

    def delete(self, agent: str, name: str, user: str | None = None) -> bool:
        validate_file_name(name)

        def _do(session: Session) -> bool:
            a = self.engine.agents.get(agent, session)
            row = self._row(session, a, name, user)
            if row is None:
                return False
            session.delete(row)
            return True

        return self.engine.db.run_write(_do)

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _row(session: Session, agent: Agent, name: str, user: str | None) -> Any:
        if user is None:
            return session.exec(
                select(AgentContextFile).where(
                    AgentContextFile.agent_id == agent.id, AgentContextFile.file_name == name
                )
            ).first()
        return session.exec(
            select(UserContextFile).where(
                UserContextFile.agent_id == agent.id,
                UserContextFile.user_id == user,
                UserContextFile.file_name == name,
            )
        ).first()


@dataclass
class DatabaseFileSource:
    """A context-file source reading one level of the database store."""

    name: str
    order: int
    per_user: bool

    def load(self, ctx: PromptContext) -> list[ContextFile]:
        with ctx.engine.db.session() as s:
            if self.per_user:
                if not ctx.user:
                    return []
                rows: list[Any] = list(
                    s.exec(
                        select(UserContextFile)
                        .where(UserContextFile.agent_id == ctx.agent.id, UserContextFile.user_id == ctx.user)
                        .order_by(col(UserContextFile.file_name))
                    )
                )
            else:
                rows = list(
                    s.exec(
                        select(AgentContextFile)
                        .where(AgentContextFile.agent_id == ctx.agent.id)
                        .order_by(col(AgentContextFile.file_name))
                    )
                )
        source = "user" if self.per_user else "agent"
        return [ContextFile(r.file_name, r.content, source) for r in rows]
