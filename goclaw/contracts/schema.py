"""The schema contract: a plugin's own tables and migration chain.

A plugin that stores rows answers the ``goclaw_schema`` hook with one :class:`SchemaComponent`
per independent set of tables. The kernel keeps only the tables its own mechanisms use (agents,
links and teams, context files, ``system_configs``, the event queue, ``worker_state``, the
embedding cache); every feature table belongs to a component and is created, upgraded and
refused by that component's own Alembic chain:

* ``name`` — a short identifier (``memory``, ``skills``); its stamp lives in the version table
  ``goclaw_schema_version_<name>`` (the kernel's is ``goclaw_schema_version``);
* ``tables`` — the SQLModel table classes the chain creates (for erasure, checks and
  ``alembic revision --autogenerate`` while writing the next migration);
* ``migrations`` — the folder of the chain's Alembic revision files (``revision`` /
  ``down_revision``, ``upgrade()`` with ``alembic.op``), a single head.

The kernel chain runs first, then each enabled component's (:mod:`goclaw.store.migrate`); a
disabled plugin's tables stay as they are. A chain's first revision should create its tables
*unless they already exist* when it takes over tables an older release created; see
``docs/plugins.md`` ("Tables and migrations").

A plugin that erases per-user or per-agent data also answers ``goclaw_forget_rows`` with
:class:`ForgetStep` objects: which rows of its tables ``goclaw forget`` removes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COMPONENT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


@dataclass(frozen=True)
class SchemaComponent:
    """One plugin-owned set of tables with its own migration chain."""

    name: str
    tables: Sequence[Any]
    migrations: Path
    description: str = ""

    @property
    def table_names(self) -> list[str]:
        """The names of :attr:`tables` (SQLModel classes or SQLAlchemy ``Table`` objects)."""
        return [getattr(t, "__tablename__", None) or t.name for t in self.tables]


@dataclass(frozen=True)
class ForgetScope:
    """What ``goclaw forget`` erases: one user (``user``) of ``agent_ids``, or whole agents
    (``user == ""``: every row of ``agent_ids``, every user). ``all_agents`` is true when a
    user is forgotten across every agent (then grants that are not per agent go too)."""

    agent_ids: tuple[str, ...]
    user: str = ""
    all_agents: bool = False

    @property
    def whole_agent(self) -> bool:
        return self.user == ""

    def clause(self, table: Any) -> Any:
        """The rows of ``table`` (with ``agent_id`` and ``user_id`` columns) in this scope."""
        from sqlalchemy import and_

        t = getattr(table, "__table__", table)
        mine = t.c.agent_id.in_(self.agent_ids)  # SQLAlchemy renders an empty IN as false
        return mine if self.whole_agent else and_(mine, t.c.user_id == self.user)


@dataclass(frozen=True)
class ForgetStep:
    """Rows of one table to erase: ``where`` is the SQLAlchemy filter (the same one counts them
    for a dry run and deletes them). ``goclaw_forget_rows`` is called once, before anything is
    erased, with an open connection, so a filter may hold values read first (e.g. the hashes
    of cached embeddings only this scope's rows had). Steps of one plugin run in the order
    given, children first; every plugin's steps run before the kernel's own (agents last)."""

    table: Any  # a SQLModel table class or a SQLAlchemy Table
    where: Any  # a SQLAlchemy boolean clause on that table
    label: str = ""

    @property
    def name(self) -> str:
        return self.label or str(self.sa_table.name)

    @property
    def sa_table(self) -> Any:
        return getattr(self.table, "__table__", self.table)
