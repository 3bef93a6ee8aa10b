"""Erase one user's data (a GDPR erasure request): ``goclaw forget --user U``.

For every agent (or the one named), the user's folder ``<agent>/users/<U>/`` goes, and every
row of the user's (the full list: ``docs/runtime.md``). Each plugin erases its own tables' rows
(``goclaw_forget_rows``); the kernel erases its own (context files, events, worker state, agents:
:mod:`goclaw.forget_kernel`) last, all in one transaction. Then each plugin drops what it
derived from them elsewhere (``goclaw_forgotten``: a search backend's own index).

Nothing of another user or of the agent level is touched: every delete is filtered by
``user_id = U`` (and the agents), and the tests count every other row before and after.
A dry run (the default of the CLI) counts what would go; the report after says what went.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goclaw.contracts.tools import check_user_id
from goclaw.errors import PermissionDeniedError

if TYPE_CHECKING:
    from goclaw.contracts.schema import ForgetScope, ForgetStep
    from goclaw.contracts.store import Agent
    from goclaw.engine import Engine


@dataclass
class ForgetReport:
    user: str
    agents: list[str]
    dry_run: bool
    files: int = 0
    folders: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    # Tables of disabled or uninstalled plugins: nobody here can say which of their rows are the
    # user's, so they are left as they are (enable the plugin and forget again).
    tables_not_erased: list[str] = field(default_factory=list)

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
            "tables_not_erased": self.tables_not_erased,
        }


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
    """Erase one user of one agent (or of every agent): files, index, then rows in one transaction.

    The rows come from each plugin's ``goclaw_forget_rows`` steps (its own tables) and the
    kernel's own steps (:mod:`goclaw.forget_kernel`), the kernel's last; the same filters count
    them for the dry run and delete them."""

    def __init__(self, engine: Engine, user: str, agent: str | None = None) -> None:
        self.engine = engine
        self.user = check_user_id(user)
        self.agents = [engine.agents.get(agent)] if agent else list(engine.agents.list())
        self.all_agents = agent is None
        self.agent_ids = [a.id for a in self.agents]

    # ------------------------------------------------------------------ selection
    def _scope(self) -> ForgetScope:
        from goclaw.contracts.schema import ForgetScope

        return ForgetScope(tuple(self.agent_ids), self.user, self.all_agents)

    def _steps(self, conn: Any) -> list[ForgetStep]:
        from goclaw.forget_kernel import kernel_steps

        scope = self._scope()
        return [*self.engine.hooks.forget_rows(self.engine, scope, conn), *kernel_steps(scope)]

    @staticmethod
    def _counts(conn: Any, steps: list[ForgetStep]) -> dict[str, int]:
        from sqlalchemy import func, select

        rows: dict[str, int] = {}
        for step in steps:
            n = conn.execute(select(func.count()).select_from(step.sa_table).where(step.where)).scalar_one()
            rows[step.name] = rows.get(step.name, 0) + int(n)
        return rows

    def _new_report(self) -> ForgetReport:
        return ForgetReport(self.user, [a.name for a in self.agents], dry_run=True)

    def _folders(self) -> list[Path]:
        """The folders whose files are erased."""
        found = (_user_folder(self.engine, a, self.user) for a in self.agents)
        return [f for f in found if f is not None]

    def _plan(self) -> tuple[ForgetReport, list[ForgetStep]]:
        report = self._new_report()
        for folder in self._folders():
            report.folders.append(str(folder))
            report.files += _count_files(folder)
        with self.engine.db.engine.connect() as conn:
            steps = self._steps(conn)
            report.rows = self._counts(conn, steps)
            report.tables_not_erased = self._unowned(conn)
        return report, steps

    def _unowned(self, conn: Any) -> list[str]:
        """Tables present that neither the kernel nor an enabled plugin declares."""
        from sqlalchemy import inspect

        from goclaw.store import models
        from goclaw.store.migrate import VERSION_TABLE

        kernel = {str(t.__tablename__) for t in models.KERNEL_TABLES}
        declared = {name for c in self.engine.hooks.schema_components() for name in c.table_names}
        present = set(inspect(conn).get_table_names(conn.dialect.default_schema_name))
        if conn.dialect.name == "postgresql":  # a partition's rows are erased through its parent
            where = "relispartition AND relnamespace = current_schema()::regnamespace"
            present -= set(conn.exec_driver_sql(f"SELECT relname FROM pg_class WHERE {where}").scalars())
        return sorted(t for t in present - kernel - declared if not t.startswith((VERSION_TABLE, "sqlite_")))

    def count(self) -> ForgetReport:
        """What :meth:`erase` would remove: files and rows per table (a dry run)."""
        return self._plan()[0]

    # ------------------------------------------------------------------ erasing
    def _remove_files(self) -> None:
        for folder in self._folders():
            shutil.rmtree(folder)

    def erase(self) -> ForgetReport:
        before, steps = self._plan()
        self._remove_files()

        def _do(session: Any) -> None:  # every row in one transaction, children first
            for step in steps:
                session.execute(step.sa_table.delete().where(step.where))

        self.engine.db.run_write(_do)
        self.engine.hooks.forgotten(self.engine, self._scope())
        self._check_gone()
        return replace(before, dry_run=False)

    def _check_gone(self) -> None:
        left = self.count()
        if left.total_rows or left.files:
            from goclaw.errors import StoreError

            raise StoreError(f"forget left {left.total_rows} rows and {left.files} files of {self.user!r}")


class AgentForgetter(Forgetter):
    """Erase one agent: its folder, every row with its ``agent_id``, its links and the agent."""

    def __init__(self, engine: Engine, agent: str) -> None:
        self.engine = engine
        self.user = ""
        self.agents = [engine.agents.get(agent)]
        self.all_agents = False
        self.agent_ids = [self.agents[0].id]

    def _new_report(self) -> ForgetReport:
        return ForgetReport("", [self.agents[0].name], dry_run=True)

    def _folders(self) -> list[Path]:
        folder = self.engine.agent_dir(self.agents[0])
        if folder.is_symlink():
            raise PermissionDeniedError(f"{folder} is a link; remove it by hand")
        return [folder] if folder.exists() else []

    def _check_gone(self) -> None:
        pass  # the agent row is gone: nothing left to count by


def forget_agent(engine: Engine, agent: str, *, dry_run: bool = True) -> ForgetReport:
    """Count (``dry_run``) or erase one agent with everything it holds, for every user."""
    f = AgentForgetter(engine, agent)
    return f.count() if dry_run else f.erase()


def forget_user(engine: Engine, user: str, *, agent: str | None = None, dry_run: bool = True) -> ForgetReport:
    """Count (``dry_run``) or erase everything of ``user`` (see the module docstring)."""
    f = Forgetter(engine, user, agent)
    return f.count() if dry_run else f.erase()
