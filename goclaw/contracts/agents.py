"""Agent and user scope helpers for plugins: resolving an agent, the tenant rule, the user
scope and per-agent setting overrides.

Shared by the memory features (episodic, KG, channel memory), which never import each other:
public paths (CLI, services, tools) resolve the caller's agent with :func:`require_agent`,
within the host's tenant; workers, which handle the events of every tenant, use
:func:`find_agent`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlmodel import select

from goclaw.contracts.store import Agent
from goclaw.errors import NotFoundError

if TYPE_CHECKING:
    from sqlmodel import Session

    from goclaw.contracts.host import Host

__all__ = ["agent_override", "find_agent", "in_tenant", "require_agent", "user_scope"]


def find_agent(host: Host, agent: str | Agent, session: Session | None = None) -> Agent | None:
    """The agent by object, id or name (events carry ids; the CLI passes names). Any tenant by
    id: workers handle the events of every tenant; a name is looked up in the host's tenant."""
    if isinstance(agent, Agent):
        return agent
    if not agent:
        return None

    def _q(s: Session) -> Agent | None:
        row = s.exec(select(Agent).where(Agent.id == agent)).first()
        if row is None:
            row = s.exec(
                select(Agent).where(Agent.name == agent, Agent.tenant_id == host.settings.tenant_id)
            ).first()
        return row

    if session is not None:
        return _q(session)
    with host.db.session() as s:
        return _q(s)


def require_agent(host: Host, agent: str | Agent) -> Agent:
    """The caller's agent by name or id, **within the host's tenant**.

    Public paths (CLI, services, tools) use this; an agent of another tenant is "unknown",
    exactly as ``host.agents.get`` answers for memory search. Workers, which handle events
    of every tenant, use :func:`find_agent`.
    """
    if isinstance(agent, Agent):
        if agent.tenant_id != host.settings.tenant_id:
            raise NotFoundError(f"unknown agent {agent.name!r}")
        return agent
    if not agent:
        raise NotFoundError("no agent given")
    return host.agents.get(agent)


def in_tenant(host: Host, agent_id: str) -> bool:
    """Whether ``agent_id`` is an agent of the host's tenant (id-based public paths)."""
    with host.db.session() as s:
        row = s.get(Agent, agent_id)
    return row is not None and row.tenant_id == host.settings.tenant_id


def user_scope(user: str | None) -> list[str]:
    """Rows visible to ``user``: agent level ("") plus the user's own."""
    return ["", user] if user else [""]


def agent_override(agent: Agent | None, key: str, default: Any) -> Any:
    """The agent's own value for ``key`` (``agents.settings``, the per-agent keys) coerced
    to the type of ``default``, else ``default`` (a plugin's table value)."""
    value = (getattr(agent, "settings", None) or {}).get(key)
    if value is None:
        return default
    if isinstance(default, bool):
        if isinstance(value, str):
            return value.strip().lower() in {"1", "true", "yes", "on"}
        return bool(value)
    try:
        return type(default)(value)
    except (TypeError, ValueError):
        return default
