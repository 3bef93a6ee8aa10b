"""The database store of context files and its name rules."""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlmodel import col, select

from goclaw.contracts.columns import utcnow
from goclaw.contracts.files import KNOWN_FILES, VIRTUAL_FILES
from goclaw.contracts.hooks import ContextFile
from goclaw.contracts.store import AgentContextFile, UserContextFile
from goclaw.contracts.tools import check_user_id
from goclaw.errors import NotFoundError, PermissionDeniedError, ValidationError

if TYPE_CHECKING:
    from sqlmodel import Session

    from goclaw.contracts.host import Host, PromptContext
    from goclaw.contracts.store import Agent

# The known file names, in prompt order, and the reserved virtual names: goclaw.contracts.files.
# Files a predefined agent shares across users: chat writes are refused.
PREDEFINED_SHARED: frozenset[str] = frozenset(
    {"AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER_PREDEFINED.md"}
)
# Files that are always personal (per user), for both agent types.
PER_USER_FILES: frozenset[str] = frozenset({"USER.md", "BOOTSTRAP.md"})
BOOTSTRAP_FILE = "BOOTSTRAP.md"
# The names a chat may create: the known context files, which the prompt merges per user (a
# user's copy overrides the agent's). Any other NAME.md is injected into every later prompt, so
# only an operator creates one (`goclaw files set`); once it exists, a chat may update it like
# the known files.
CHAT_CREATABLE: tuple[str, ...] = KNOWN_FILES
ALREADY_LOADED = "{name} is already loaded in system prompt; there is nothing to read or write."
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

    def __init__(self, engine: Host) -> None:
        self.engine = engine

    @property
    def max_file_chars(self) -> int:
        return int(self.engine.plugin_settings("context_files").max_file_chars)

    @property
    def cache_seconds(self) -> float:
        """How long cached reads are trusted across processes (``goclaw.contracts.files``)."""
        from goclaw_context_files.changes import cache_seconds

        return cache_seconds(self.engine)

    # ------------------------------------------------------------------ reads
    def get(self, agent: str, name: str, user: str | None = None) -> str:
        validate_file_name(name)
        with self.engine.db.session() as s:
            a = self.engine.agents.get(agent, s)
            row = self._row(s, a, name, user)
            if row is None:
                where = f"user {user!r} of agent {agent!r}" if user else f"agent {agent!r}"
                raise NotFoundError(f"{name} does not exist for {where}")
            return str(row.content)

    def read(self, agent: Agent, name: str, user: str | None, session: Session) -> str | None:
        row = self._row(session, agent, name, user)
        return None if row is None else row.content

    def list(self, agent: str, user: str | None = None) -> list[FileInfo]:
        with self.engine.db.session() as s:
            a = self.engine.agents.get(agent, s)
            if user is None:
                rows: list[Any] = list(
                    s.exec(select(AgentContextFile).where(AgentContextFile.agent_id == a.id))
                )
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

    def users(self, agent: str) -> builtins.list[str]:
        with self.engine.db.session() as s:
            a = self.engine.agents.get(agent, s)
            return sorted(
                set(s.exec(select(UserContextFile.user_id).where(UserContextFile.agent_id == a.id)))
            )

    # ------------------------------------------------------------------ writes
    def set(self, agent: str, name: str, content: str, user: str | None = None) -> str:
        """Write a file through the admin path (``goclaw files set``, the summoner).

        The admin path may write any level. Writing ``BOOTSTRAP.md`` empty (or whitespace only)
        deletes it instead. Returns ``"written"`` or ``"deleted"``.
        """
        return self.write(agent, name, content, user=user, via="admin")

    def write_from_chat(self, agent: str, user: str, name: str, content: str) -> str:
        """Write a file on behalf of the model (the runtime's file tool).

        Rules, in this order: virtual names are refused; ``BOOTSTRAP.md`` written
        empty is deleted (before the write-block, so the first-run ritual can always end); a name
        outside :data:`CHAT_CREATABLE` that does not exist yet is refused; for a predefined agent
        a write to a shared agent-level file is refused; everything else goes to the user's own
        copy.
        """
        return self.write(agent, name, content, user=user, via="chat")

    def write(
        self, agent: str, name: str, content: str, *, user: str | None = None, via: str = "admin"
    ) -> str:
        """The single write entry point; ``via`` is ``"admin"`` or ``"chat"``."""
        if via not in ("admin", "chat"):
            raise ValidationError(f"unknown write path {via!r}: use 'admin' or 'chat'")
        validate_file_name(name)
        if name in VIRTUAL_FILES:
            raise PermissionDeniedError(
                f"{name} is generated by the system and already loaded in system prompt; it cannot be written"
            )
        if via == "chat" and not user:
            raise ValidationError("a chat write needs the user it is made for")
        if user is not None:
            check_user_id(user)
        self._check_content(name, content)

        def _do(session: Session) -> str:
            a = self.engine.agents.get(agent, session)
            if name == BOOTSTRAP_FILE and not content.strip():
                row = self._row(session, a, name, user)
                if row is not None:
                    session.delete(row)
                return "deleted"
            if (
                via == "chat"
                and name not in CHAT_CREATABLE
                and (self._row(session, a, name, user) or self._row(session, a, name, None)) is None
            ):
                raise PermissionDeniedError(
                    f"{name} is not a context file a chat may create (allowed: "
                    f"{', '.join(CHAT_CREATABLE)}); an operator can add it with goclaw files set"
                )
            if via == "chat" and a.agent_type == "predefined" and name not in PER_USER_FILES:
                shared = name in PREDEFINED_SHARED or self._row(session, a, name, None) is not None
                if shared:
                    raise PermissionDeniedError(
                        f"{name} belongs to predefined agent {a.name!r} and is shared by all its users; "
                        "it cannot be changed from a chat (an operator can: goclaw files set)"
                    )
            self.write_row(session, a, name, content, user)
            return "written"

        return self.engine.db.run_write(_do)

    def read_from_chat(self, agent: str, user: str | None, name: str) -> str:
        """Read a file for the model: the user's copy first, then the agent level.

        A virtual file answers with the reminder that it is already loaded in system prompt.
        """
        validate_file_name(name)
        if name in VIRTUAL_FILES:
            return ALREADY_LOADED.format(name=name)
        with self.engine.db.session() as s:
            a = self.engine.agents.get(agent, s)
            row = self._row(s, a, name, user) if user else None
            if row is None or not row.content.strip():
                row = self._row(s, a, name, None) or row
        if row is None:
            raise NotFoundError(f"{name} does not exist for agent {agent!r}")
        return str(row.content)

    def _check_content(self, name: str, content: str) -> None:
        if not isinstance(content, str):
            raise ValidationError(f"{name}: content must be text")
        if len(content) > self.max_file_chars:
            raise ValidationError(
                f"{name} is {len(content):,} characters; the limit is {self.max_file_chars:,} "
                "([plugins.context_files] max_file_chars)"
            )
        if "\x00" in content:
            raise ValidationError(f"{name} contains a NUL byte; context files must be text")

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

    # ------------------------------------------------------------------ cached loads (prompt path)
    def load_level(self, agent: Agent, user: str | None) -> builtins.list[tuple[str, str]]:
        """``[(name, content)]`` of one level, ordered by name, cached until a write (see
        :mod:`goclaw_context_files.changes`): a warm prompt build does not touch the database."""
        from goclaw_context_files.changes import cache_seconds, tracker

        def _load() -> builtins.list[tuple[str, str]]:
            with self.engine.db.session() as s:
                if user is not None:
                    stmt: Any = (
                        select(UserContextFile.file_name, UserContextFile.content)
                        .where(UserContextFile.agent_id == agent.id, UserContextFile.user_id == user)
                        .order_by(col(UserContextFile.file_name))
                    )
                else:
                    stmt = (
                        select(AgentContextFile.file_name, AgentContextFile.content)
                        .where(AgentContextFile.agent_id == agent.id)
                        .order_by(col(AgentContextFile.file_name))
                    )
                return [(str(n), str(c)) for n, c in s.exec(stmt)]

        return tracker(self.engine).cached(("files", agent.id, user), cache_seconds(self.engine), _load)

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
        if self.per_user and not ctx.user:
            return []
        store: ContextFileStore = ctx.engine.files
        rows = store.load_level(ctx.agent, ctx.user if self.per_user else None)
        source = "user" if self.per_user else "agent"
        return [ContextFile(n, c, source) for n, c in rows]
