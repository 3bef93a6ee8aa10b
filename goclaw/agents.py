"""Agents: the scope every other row hangs from, plus links (DELEGATION.md) and teams (TEAM.md)."""

from __future__ import annotations

import builtins
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from goclaw.contracts.columns import utcnow
from goclaw.contracts.host import HookCalls, Host, HostSettings
from goclaw.contracts.store import Agent, AgentLink, Team, TeamMember
from goclaw.errors import NotFoundError, ValidationError

if TYPE_CHECKING:
    from sqlmodel import Session

AGENT_TYPES = ("open", "predefined")
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def validate_agent_name(name: str) -> str:
    if not _NAME_RE.match(name or ""):
        raise ValidationError(
            f"invalid agent name {name!r}: use 1-64 characters of a-z, 0-9, '-' and '_', "
            "starting with a letter or digit"
        )
    return name


class _Settings(HostSettings, Protocol):
    @property
    def agents_dir(self) -> str: ...


class _Hooks(HookCalls, Protocol):
    def agent_created(self, engine: Host, agent: Agent) -> None: ...


class _Engine(Host, Protocol):
    """What the agent service uses of its engine: the host, plus the agents folder setting and
    the ``goclaw_agent_created`` call (a Protocol: the engine imports this module)."""

    @property
    def settings(self) -> _Settings: ...

    @property
    def hooks(self) -> _Hooks: ...


class AgentService:
    """``engine.agents``: create, look up and list agents; link them; group them in teams."""

    def __init__(self, engine: _Engine) -> None:
        self.engine = engine

    @property
    def tenant(self) -> str:
        return self.engine.settings.tenant_id

    # ------------------------------------------------------------------ agents
    def create(
        self,
        name: str,
        agent_type: str = "open",
        *,
        display_name: str = "",
        description: str = "",
        workspace_dir: str | None = None,
        settings: dict[str, Any] | None = None,
        status: str = "active",
    ) -> Agent:
        """Create an agent; the ``goclaw_agent_created`` hook then seeds its files."""
        validate_agent_name(name)
        if agent_type not in AGENT_TYPES:
            raise ValidationError(f"invalid agent type {agent_type!r}: use 'open' or 'predefined'")
        if self._exists(name):  # before the folder check, which would call it an overlap
            raise ValidationError(f"agent {name!r} already exists")
        self.check_agent_dir(name, workspace_dir)
        agent = Agent(
            tenant_id=self.tenant,
            name=name,
            agent_type=agent_type,
            display_name=display_name,
            description=description,
            workspace_dir=workspace_dir,
            settings=dict(settings or {}),
            status=status,
        )
        try:
            with self.engine.db.write() as session:
                session.add(agent)
        except IntegrityError:
            raise ValidationError(f"agent {name!r} already exists") from None
        except Exception as exc:  # StoreError wraps IntegrityError's cause
            if isinstance(exc.__cause__, IntegrityError):
                raise ValidationError(f"agent {name!r} already exists") from None
            raise
        self.engine.hooks.agent_created(self.engine, agent)
        return agent

    def _exists(self, name: str) -> bool:
        try:
            self.get(name)
        except NotFoundError:
            return False
        return True

    def get(self, name: str, session: Session | None = None) -> Agent:
        """The agent called ``name`` (or with that id); :class:`NotFoundError` otherwise."""
        stmt = select(Agent).where(Agent.tenant_id == self.tenant, Agent.name == name)
        if session is not None:
            agent = session.exec(stmt).first()
        else:
            with self.engine.db.session() as s:
                agent = s.exec(stmt).first()
                if agent is None:
                    agent = s.exec(
                        select(Agent).where(Agent.id == name, Agent.tenant_id == self.tenant)
                    ).first()
        if agent is None:
            raise NotFoundError(f"unknown agent {name!r}; create it with: goclaw agent create {name}")
        return agent

    def get_cached(self, name: str, ttl: float = 5.0) -> Agent:
        """:meth:`get` through the engine's ``agents`` change tracker (see ``AgentDirectory``)."""
        tracker = self.engine.change_tracker("agents", (Agent,))
        agent: Agent = tracker.cached(("agent", self.tenant, name), ttl, lambda: self.get(name))
        return agent

    # ------------------------------------------------------------------ folders
    def _folder(self, name: str, workspace_dir: str | None) -> Path:
        if workspace_dir:
            path = Path(workspace_dir).expanduser()
            path = path if path.is_absolute() else self.engine.workspace / path
        else:
            path = self.engine.workspace / self.engine.settings.agents_dir / name
        return path.resolve()

    def check_agent_dir(self, name: str, workspace_dir: str | None, *, exclude_id: str | None = None) -> None:
        """An agent's folder holds its memory: it must lie below the workspace's agents folder
        (symlinks resolved) and must neither be, contain nor sit inside another agent's folder,
        so no agent can read another's memory through its own."""
        area = (self.engine.workspace / self.engine.settings.agents_dir).resolve()
        if workspace_dir is not None:
            if not workspace_dir.strip() or "\x00" in workspace_dir:
                raise ValidationError("invalid agent folder: empty or contains a NUL byte")
            target = self._folder(name, workspace_dir)
            if target == area or not target.is_relative_to(area):
                raise ValidationError(
                    f"agent folder {workspace_dir!r} is outside {area}: an agent's folder must be "
                    f"a folder of its own below it (default {self.engine.settings.agents_dir}/{name})"
                )
        else:
            target = self._folder(name, None)
        with self.engine.db.session() as s:
            others = list(s.exec(select(Agent).where(Agent.id != (exclude_id or ""))))
        for other in others:
            theirs = self._folder(other.name, other.workspace_dir)
            if target == theirs or target.is_relative_to(theirs) or theirs.is_relative_to(target):
                owner = f"agent {other.name!r}" if other.tenant_id == self.tenant else "another agent"
                raise ValidationError(
                    f"folder {target} overlaps the folder of {owner}; give agent {name!r} a folder of its own"
                )

    def list(self) -> list[Agent]:
        with self.engine.db.session() as s:
            return list(s.exec(select(Agent).where(Agent.tenant_id == self.tenant).order_by(Agent.name)))

    def update(self, name: str, **fields: Any) -> Agent:
        allowed = {"display_name", "description", "status", "settings", "workspace_dir", "agent_type"}
        bad = set(fields) - allowed
        if bad:
            raise ValidationError(f"cannot update agent field(s): {', '.join(sorted(bad))}")

        if "workspace_dir" in fields:
            current = self.get(name)
            self.check_agent_dir(current.name, fields["workspace_dir"], exclude_id=current.id)

        def _do(session: Session) -> Agent:
            agent = self.get(name, session)
            for key, value in fields.items():
                setattr(agent, key, value)
            agent.updated_at = utcnow()
            session.add(agent)
            return agent

        return self.engine.db.run_write(_do)

    def update_settings(self, name: str, **values: Any) -> Agent:
        """Merge ``values`` into the agent's settings (``skill_allow_list``, auto-inject, ...)."""

        def _do(session: Session) -> Agent:
            agent = self.get(name, session)
            agent.settings = {**agent.settings, **values}
            agent.updated_at = utcnow()
            session.add(agent)
            return agent

        return self.engine.db.run_write(_do)

    # ------------------------------------------------------------------ links (DELEGATION.md)
    def link(self, source: str, target: str, description: str = "") -> AgentLink:
        if source == target:
            raise ValidationError("an agent cannot delegate to itself")

        def _do(session: Session) -> AgentLink:
            src, dst = self.get(source, session), self.get(target, session)
            existing = session.exec(
                select(AgentLink).where(
                    AgentLink.source_agent_id == src.id, AgentLink.target_agent_id == dst.id
                )
            ).first()
            link = existing or AgentLink(source_agent_id=src.id, target_agent_id=dst.id)
            link.description = description or link.description
            session.add(link)
            return link

        return self.engine.db.run_write(_do)

    def unlink(self, source: str, target: str) -> bool:
        def _do(session: Session) -> bool:
            src, dst = self.get(source, session), self.get(target, session)
            link = session.exec(
                select(AgentLink).where(
                    AgentLink.source_agent_id == src.id, AgentLink.target_agent_id == dst.id
                )
            ).first()
            if link is None:
                return False
            session.delete(link)
            return True

        return self.engine.db.run_write(_do)

    def links(self, source: str) -> builtins.list[tuple[Agent, AgentLink]]:
        """The agents ``source`` can delegate to, with each link, ordered by name."""
        with self.engine.db.session() as s:
            src = self.get(source, s)
            rows = s.exec(
                select(Agent, AgentLink)
                .join(AgentLink, col(AgentLink.target_agent_id) == col(Agent.id))
                .where(AgentLink.source_agent_id == src.id)
                .order_by(Agent.name)
            ).all()
            return [(a, link) for a, link in rows]

    # ------------------------------------------------------------------ teams (TEAM.md)
    def create_team(self, name: str, description: str = "") -> Team:
        validate_agent_name(name)

        def _do(session: Session) -> Team:
            team = session.exec(select(Team).where(Team.tenant_id == self.tenant, Team.name == name)).first()
            if team is None:
                team = Team(tenant_id=self.tenant, name=name, description=description)
            elif description:
                team.description = description
            session.add(team)
            return team

        return self.engine.db.run_write(_do)

    def add_to_team(self, team: str, agent: str, role: str = "member") -> None:
        def _do(session: Session) -> None:
            t = session.exec(select(Team).where(Team.tenant_id == self.tenant, Team.name == team)).first()
            if t is None:
                raise NotFoundError(f"unknown team {team!r}; create it with: goclaw team create {team}")
            a = self.get(agent, session)
            member = session.get(TeamMember, (t.id, a.id)) or TeamMember(team_id=t.id, agent_id=a.id)
            member.role = role
            session.add(member)

        self.engine.db.run_write(_do)

    def teams_of(self, agent: str) -> builtins.list[tuple[Team, str, builtins.list[tuple[Agent, str]]]]:
        """For each team ``agent`` belongs to: (team, its role, [(teammate, role)])."""
        with self.engine.db.session() as s:
            a = self.get(agent, s)
            out: builtins.list[tuple[Team, str, builtins.list[tuple[Agent, str]]]] = []
            memberships = s.exec(
                select(Team, TeamMember)
                .join(TeamMember, col(TeamMember.team_id) == col(Team.id))
                .where(TeamMember.agent_id == a.id)
                .order_by(Team.name)
            ).all()
            for team, membership in memberships:
                mates = s.exec(
                    select(Agent, TeamMember)
                    .join(TeamMember, col(TeamMember.agent_id) == col(Agent.id))
                    .where(TeamMember.team_id == team.id, Agent.id != a.id)
                    .order_by(Agent.name)
                ).all()
                out.append((team, membership.role, [(m, tm.role) for m, tm in mates]))
            return out
