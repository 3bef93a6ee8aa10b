"""Erase one user's data (a GDPR erasure request, issue 14): ``goclaw forget --user U``.

What goes, for every agent (or the one named):

* the user's folder ``<agent>/users/<U>/`` (memory files and anything else in it), and the
  index of those files (documents and chunks, through the memory service so its caches follow);
* cached embeddings whose text only this user's chunks had (another scope's identical text keeps
  its cache row);
* sessions with their messages and per-session worker state; episodic summaries; knowledge-graph
  entities, relations and dedup candidates; passive channel-memory items; per-user context files;
  queued events about the user (with their deliveries); the dreaming worker's state for the user;
* across all agents only: the user's skill grants.

Nothing of another user or of the agent level is touched: every delete is filtered by
``user_id = U`` (and the agents), and the tests count every other row before and after.
A dry run (the default of the CLI) counts what would go; the report after says what went.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goclaw.errors import PermissionDeniedError, ValidationError

if TYPE_CHECKING:
    from goclaw.engine import Engine
    from goclaw.store.models import Agent

# Tables whose rows carry the user in a ``user_id`` column (agent-scoped unless noted).
USER_TABLES = (
    "memory_chunks",
    "memory_documents",
    "episodic_summaries",
    "kg_dedup_candidates",
    "kg_relations",
    "kg_entities",
    "channel_memory_extraction_items",
    "user_context_files",
    "events",
    "sessions",
)


@dataclass
class ForgetReport:
    user: str
    agents: list[str]
    dry_run: bool
    files: int = 0
    folders: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "agents": self.agents,
            "dry_run": self.dry_run,
            "files": self.files,
            "folders": self.folders,
            "rows": dict(sorted(self.rows.items())),
            "total_rows": self.total_rows,
        }


def _check_user(user: str) -> str:
    if not user or not user.strip() or "/" in user or "\\" in user or "\x00" in user or user.startswith("."):
        raise ValidationError(f"invalid user id {user!r}")
    return user


def _user_folder(engine: Engine, agent: Agent, user: str) -> Path | None:
    base = engine.agent_dir(agent) / "users"
    folder = base / user
    if not folder.exists() and not folder.is_symlink():
        return None
    if folder.is_symlink() or folder.resolve().parent != base.resolve():
        raise PermissionDeniedError(f"{folder} is a link or leaves the users folder; remove it by hand")
    return folder


def _count_files(folder: Path) -> int:
    return sum(1 for p in folder.rglob("*") if p.is_file())


class Forgetter:
    def __init__(self, engine: Engine, user: str, agent: str | None = None) -> None:
        self.engine = engine
        self.user = _check_user(user)
        self.agents = [engine.agents.get(agent)] if agent else list(engine.agents.list())
        self.all_agents = agent is None
        self.agent_ids = [a.id for a in self.agents]

    # ------------------------------------------------------------------ selection
    def _statements(self, tables: dict[str, Any], cache_hashes: list[str]) -> dict[str, Any]:
        """``{label: select-able where clause}`` per table (the same filters count and delete)."""
        from sqlalchemy import and_, or_

        where: dict[str, Any] = {}
        ids = self.agent_ids  # SQLAlchemy renders an empty IN as false
        for name in USER_TABLES:
            t = tables[name]
            where[name] = and_(t.c.user_id == self.user, t.c.agent_id.in_(ids))
        s, m = tables["sessions"], tables["session_messages"]
        keys = s.select().with_only_columns(s.c.key).where(where["sessions"]).scalar_subquery()
        where["session_messages"] = m.c.session_key.in_(keys)
        ev, d = tables["events"], tables["event_deliveries"]
        ev_ids = ev.select().with_only_columns(ev.c.id).where(where["events"]).scalar_subquery()
        where["event_deliveries"] = d.c.event_id.in_(ev_ids)
        ws = tables["worker_state"]
        where["worker_state"] = or_(ws.c.scope.in_(keys), ws.c.scope.in_([f"{a}:{self.user}" for a in ids]))
        cache = tables["embedding_cache"]
        where["embedding_cache"] = cache.c.chunk_hash.in_(cache_hashes)
        if self.all_agents:
            where["skill_user_grants"] = tables["skill_user_grants"].c.user_id == self.user
        return where

    def _cache_hashes(self, conn: Any, tables: dict[str, Any]) -> list[str]:
        """Hashes of this user's chunks that no other scope's chunk has."""
        from sqlalchemy import and_, not_, select

        c = tables["memory_chunks"]
        mine = and_(c.c.user_id == self.user, c.c.agent_id.in_(self.agent_ids))
        own = {r[0] for r in conn.execute(select(c.c.chunk_hash).where(mine).distinct())}
        if not own:
            return []
        shared = {
            r[0]
            for r in conn.execute(
                select(c.c.chunk_hash).where(not_(mine), c.c.chunk_hash.in_(sorted(own))).distinct()
            )
        }
        return sorted(own - shared)

    def _tables(self) -> dict[str, Any]:
        from sqlmodel import SQLModel

        import goclaw.store.models  # noqa: F401 - registers the tables

        return dict(SQLModel.metadata.tables)

    def _new_report(self) -> ForgetReport:
        return ForgetReport(self.user, [a.name for a in self.agents], dry_run=True)

    def _folders(self) -> list[Path]:
        """The folders whose files are erased."""
        found = (_user_folder(self.engine, a, self.user) for a in self.agents)
        return [f for f in found if f is not None]

    def count(self) -> ForgetReport:
        """What :meth:`erase` would remove: files and rows per table (a dry run)."""
        from sqlalchemy import func, select

        report = self._new_report()
        for folder in self._folders():
            report.folders.append(str(folder))
            report.files += _count_files(folder)
        tables = self._tables()
        with self.engine.db.engine.connect() as conn:
            where = self._statements(tables, self._cache_hashes(conn, tables))
            for name, clause in where.items():
                n = conn.execute(select(func.count()).select_from(tables[name]).where(clause)).scalar_one()
                report.rows[name] = int(n)
        return report

    # ------------------------------------------------------------------ erasing
    def erase(self) -> ForgetReport:
        before = self.count()
        tables = self._tables()
        with self.engine.db.engine.connect() as conn:
            hashes = self._cache_hashes(conn, tables)
        # 1. the files, then their index through the memory service (its caches follow)
        for a in self.agents:
            folder = _user_folder(self.engine, a, self.user)
            if folder is not None:
                shutil.rmtree(folder)
        if self.engine.has_service("memory"):
            for a in self.agents:
                self.engine.memory.index(a, self.user)
        # 2. every other row in one transaction, children first
        order = [
            "session_messages",
            "worker_state",
            "sessions",
            "event_deliveries",
            "events",
            "kg_dedup_candidates",
            "kg_relations",
            "kg_entities",
            "episodic_summaries",
            "channel_memory_extraction_items",
            "user_context_files",
            "memory_chunks",
            "memory_documents",
            "embedding_cache",
            "skill_user_grants",
        ]

        def _do(session: Any) -> None:
            where = self._statements(tables, hashes)
            for name in order:
                if name in where:
                    session.execute(tables[name].delete().where(where[name]))

        self.engine.db.run_write(_do)
        self._invalidate()
        report = ForgetReport(
            self.user, before.agents, dry_run=False, files=before.files, folders=before.folders
        )
        report.rows = dict(before.rows)
        left = self.count()
        if left.total_rows or left.files:
            from goclaw.errors import StoreError

            raise StoreError(f"forget left {left.total_rows} rows and {left.files} files of {self.user!r}")
        return report

    def _invalidate(self) -> None:
        """Let the memory backend drop what it cached from the deleted rows."""
        if not self.engine.has_service("memory"):
            return
        for a in self.agents:
            self.engine.memory.invalidate(a.id)


# Tables whose rows belong to an agent through an ``agent_id`` column.
AGENT_TABLES = (
    *USER_TABLES,
    "agent_context_files",
    "skill_agent_grants",
    "team_members",
)
AGENT_ORDER = (
    "session_messages",
    "worker_state",
    "sessions",
    "event_deliveries",
    "events",
    "kg_dedup_candidates",
    "kg_relations",
    "kg_entities",
    "episodic_summaries",
    "channel_memory_extraction_items",
    "user_context_files",
    "agent_context_files",
    "memory_chunks",
    "memory_documents",
    "embedding_cache",
    "skill_agent_grants",
    "team_members",
    "agent_links",
    "agents",
)


class AgentForgetter(Forgetter):
    """Erase one agent: its folder, every row with its ``agent_id``, its links and the agent."""

    def __init__(self, engine: Engine, agent: str) -> None:
        self.engine = engine
        self.user = ""
        self.agents = [engine.agents.get(agent)]
        self.all_agents = False
        self.agent_ids = [self.agents[0].id]

    def _statements(self, tables: dict[str, Any], cache_hashes: list[str]) -> dict[str, Any]:
        from sqlalchemy import or_

        a = self.agent_ids[0]
        where: dict[str, Any] = {name: tables[name].c.agent_id == a for name in AGENT_TABLES}
        s, m = tables["sessions"], tables["session_messages"]
        keys = s.select().with_only_columns(s.c.key).where(where["sessions"]).scalar_subquery()
        where["session_messages"] = m.c.session_key.in_(keys)
        ev, d = tables["events"], tables["event_deliveries"]
        ev_ids = ev.select().with_only_columns(ev.c.id).where(where["events"]).scalar_subquery()
        where["event_deliveries"] = d.c.event_id.in_(ev_ids)
        ws = tables["worker_state"]
        where["worker_state"] = or_(ws.c.scope.in_(keys), ws.c.scope.like(f"{a}:%"))
        links = tables["agent_links"]
        where["agent_links"] = or_(links.c.source_agent_id == a, links.c.target_agent_id == a)
        where["embedding_cache"] = tables["embedding_cache"].c.chunk_hash.in_(cache_hashes)
        where["agents"] = tables["agents"].c.id == a
        return where

    def _cache_hashes(self, conn: Any, tables: dict[str, Any]) -> list[str]:
        from sqlalchemy import select

        c = tables["memory_chunks"]
        a = self.agent_ids[0]
        own = {r[0] for r in conn.execute(select(c.c.chunk_hash).where(c.c.agent_id == a).distinct())}
        if not own:
            return []
        shared = {
            r[0]
            for r in conn.execute(
                select(c.c.chunk_hash).where(c.c.agent_id != a, c.c.chunk_hash.in_(sorted(own))).distinct()
            )
        }
        return sorted(own - shared)

    def _folder(self) -> Path | None:
        folder = self.engine.agent_dir(self.agents[0])
        if not folder.exists() and not folder.is_symlink():
            return None
        if folder.is_symlink():
            raise PermissionDeniedError(f"{folder} is a link; remove it by hand")
        return folder

    def _new_report(self) -> ForgetReport:
        return ForgetReport("", [self.agents[0].name], dry_run=True)

    def _folders(self) -> list[Path]:
        folder = self._folder()
        return [] if folder is None else [folder]

    def erase(self) -> ForgetReport:
        before = self.count()
        tables = self._tables()
        with self.engine.db.engine.connect() as conn:
            hashes = self._cache_hashes(conn, tables)
        folder = self._folder()
        if folder is not None:
            shutil.rmtree(folder)

        def _do(session: Any) -> None:
            where = self._statements(tables, hashes)
            for name in AGENT_ORDER:
                session.execute(tables[name].delete().where(where[name]))

        self.engine.db.run_write(_do)
        self._invalidate()
        report = ForgetReport("", before.agents, dry_run=False, files=before.files, folders=before.folders)
        report.rows = dict(before.rows)
        return report


def forget_agent(engine: Engine, agent: str, *, dry_run: bool = True) -> ForgetReport:
    """Count (``dry_run``) or erase one agent with everything it holds, for every user."""
    f = AgentForgetter(engine, agent)
    return f.count() if dry_run else f.erase()


def forget_user(engine: Engine, user: str, *, agent: str | None = None, dry_run: bool = True) -> ForgetReport:
    """Count (``dry_run``) or erase everything of ``user`` (see the module docstring)."""
    f = Forgetter(engine, user, agent)
    return f.count() if dry_run else f.erase()
