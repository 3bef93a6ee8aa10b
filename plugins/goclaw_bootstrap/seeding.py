"""Plugin ``goclaw.bootstrap``: templates seeded into new agents and users, and the summoner.

* :func:`seed_to_store`, on the ``goclaw_agent_created`` hook: a predefined
  agent gets AGENTS.md, SOUL.md, IDENTITY.md and USER_PREDEFINED.md at agent level; an open
  agent gets nothing there (its files are per user).
* :func:`seed_user_files`, on a user's first prompt (the prompt builder
  calls the ``seeder`` service): an open agent's user gets all six files, a predefined agent's
  user gets USER.md (the agent-level USER.md when it has content) and the predefined
  BOOTSTRAP.md.

Seeding never overwrites content. A user who already has files is not seeded again, so a
BOOTSTRAP.md deleted at the end of the first-run ritual stays deleted across restarts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from goclaw import hookimpl
from goclaw.contracts.store import AgentContextFile, UserContextFile
from goclaw.errors import StoreError
from goclaw_bootstrap.templates import load_template

if TYPE_CHECKING:
    from sqlmodel import Session

    from goclaw.contracts.host import Host
    from goclaw.contracts.store import Agent

# What each level receives, in the order of goclaw.contracts.files.KNOWN_FILES.
PREDEFINED_AGENT_FILES: tuple[str, ...] = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER_PREDEFINED.md")
OPEN_USER_FILES: tuple[str, ...] = (
    "AGENTS.md",
    "SOUL.md",
    "TOOLS.md",
    "IDENTITY.md",
    "USER.md",
    "BOOTSTRAP.md",
)
PREDEFINED_USER_FILES: tuple[str, ...] = ("USER.md", "BOOTSTRAP.md")


class BootstrapSettings(BaseModel):
    """``[plugins.bootstrap]``: the summoner. Truncation is the prompt's
    (``[plugins.prompt]``), the context-file cache ``[plugins.context_files]``'s."""

    summon_timeout: float = Field(default=60.0, gt=0, description="seconds for the summoning LLM call")


def _contents(session: Session, model: Any, **where: Any) -> dict[str, str]:
    stmt = select(model)
    for key, value in where.items():
        stmt = stmt.where(getattr(model, key) == value)
    return {r.file_name: r.content for r in session.exec(stmt)}


def _with_retry(engine: Host, fn: Any) -> Any:
    """Two processes seeding the same agent/user race on the unique key: the loser retries and
    then finds the rows already there."""
    try:
        return engine.db.run_write(fn)
    except StoreError as exc:
        if not isinstance(exc.__cause__, IntegrityError):
            raise
        return engine.db.run_write(fn)


def seed_to_store(engine: Host, agent: Agent) -> list[str]:
    """Seed agent-level files. Returns the names written."""
    if agent.agent_type != "predefined":
        return []
    store = engine.files

    def _do(session: Session) -> list[str]:
        existing = _contents(session, AgentContextFile, agent_id=agent.id)
        written = []
        for name in PREDEFINED_AGENT_FILES:
            if (existing.get(name) or "").strip():
                continue
            store.write_row(session, agent, name, load_template(name), None)
            written.append(name)
        return written

    result: list[str] = _with_retry(engine, _do)
    return result


def seed_user_files(engine: Host, agent: Agent, user: str, *, skip_if_any_exist: bool = True) -> list[str]:
    """Seed one user's files. Returns the names written.

    ``skip_if_any_exist`` (the first-chat default): a user who has any file already had a first
    chat, so nothing is written (a finished ritual's BOOTSTRAP.md is not re-created). With
    ``False``, missing or empty files are filled in; content is never overwritten.
    """
    store = engine.files
    predefined = agent.agent_type == "predefined"

    def _do(session: Session) -> list[str]:
        mine = _contents(session, UserContextFile, agent_id=agent.id, user_id=user)
        if skip_if_any_exist and mine:
            return []
        base = _contents(session, AgentContextFile, agent_id=agent.id)
        written = []
        for name in PREDEFINED_USER_FILES if predefined else OPEN_USER_FILES:
            if (mine.get(name) or "").strip():
                continue
            if name == "BOOTSTRAP.md":
                content = load_template("BOOTSTRAP_PREDEFINED.md" if predefined else "BOOTSTRAP.md")
            elif (base.get(name) or "").strip():
                # The agent-level copy (an owner profile for predefined USER.md, a summoned or
                # operator-written persona for open agents) seeds the user's copy.
                content = base[name]
            else:
                content = load_template(name)
            store.write_row(session, agent, name, content, user)
            written.append(name)
        return written

    result: list[str] = _with_retry(engine, _do)
    return result


class Seeder:
    """``engine.service("seeder")``: the seeding operations bound to one engine."""

    def __init__(self, engine: Host) -> None:
        self.engine = engine

    def seed_agent(self, agent: str | Agent) -> list[str]:
        a = self.engine.agents.get(agent) if isinstance(agent, str) else agent
        return seed_to_store(self.engine, a)

    def seed_user(self, agent: str | Agent, user: str, *, skip_if_any_exist: bool = True) -> list[str]:
        a = self.engine.agents.get(agent) if isinstance(agent, str) else agent
        return seed_user_files(self.engine, a, user, skip_if_any_exist=skip_if_any_exist)


@hookimpl
def goclaw_settings_model() -> type[BootstrapSettings]:
    return BootstrapSettings


@hookimpl
def goclaw_agent_created(engine: Host, agent: Agent) -> None:
    if engine.has_service("files"):
        seed_to_store(engine, agent)


@hookimpl
def goclaw_services(engine: Host) -> dict[str, Any]:
    from goclaw_bootstrap.summoner import Summoner

    return {"seeder": Seeder(engine), "summoner": Summoner(engine)}
