"""The kernel's own erasure steps for ``goclaw forget`` (the plugins' come from
``goclaw_forget_rows``): context files, queued events with their deliveries, worker state, and
for a whole agent its links, team memberships and the agent row itself (last)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, or_

from goclaw.contracts.schema import ForgetScope, ForgetStep
from goclaw.store import models as m


def _t(model: Any) -> Any:
    return model.__table__


def _scoped(table: Any, scope: ForgetScope) -> Any:
    clause = table.c.agent_id.in_(scope.agent_ids)  # SQLAlchemy renders an empty IN as false
    return clause if scope.whole_agent else and_(clause, table.c.user_id == scope.user)


def _feature_steps(scope: ForgetScope) -> tuple[list[ForgetStep], Any]:
    """Sessions, episodic memory, the KG and channel memory (and the session keys subquery)."""
    s, msg = _t(m.Session), _t(m.SessionMessage)
    keys = s.select().with_only_columns(s.c.key).where(_scoped(s, scope)).scalar_subquery()
    steps = [ForgetStep(msg, msg.c.session_key.in_(keys))]
    tail = [
        ForgetStep(t, _scoped(t, scope))
        for t in (
            _t(m.KGDedupCandidate),
            _t(m.KGRelation),
            _t(m.KGEntity),
            _t(m.EpisodicSummary),
            _t(m.ChannelMemoryItem),
        )
    ]
    return steps, (keys, ForgetStep(s, _scoped(s, scope)), tail)


def kernel_steps(scope: ForgetScope) -> list[ForgetStep]:
    """Children first; for a whole agent the agent row goes last."""
    first, (keys, sessions, tail) = _feature_steps(scope)
    ws, ev, d = _t(m.WorkerState), _t(m.Event), _t(m.EventDelivery)
    ids = list(scope.agent_ids)
    if scope.whole_agent:
        per_scope = or_(*(ws.c.scope.like(f"{a}:%") for a in ids)) if ids else ws.c.scope.in_([])
    else:
        per_scope = ws.c.scope.in_([f"{a}:{scope.user}" for a in ids])
    ev_ids = ev.select().with_only_columns(ev.c.id).where(_scoped(ev, scope)).scalar_subquery()
    steps = [
        *first,
        ForgetStep(ws, or_(ws.c.scope.in_(keys), per_scope)),
        sessions,
        ForgetStep(d, d.c.event_id.in_(ev_ids)),
        ForgetStep(ev, _scoped(ev, scope)),
        *tail,
        ForgetStep(m.UserContextFile, _scoped(_t(m.UserContextFile), scope)),
    ]
    if scope.whole_agent:
        ctx, team, links, agents = (
            _t(m.AgentContextFile),
            _t(m.TeamMember),
            _t(m.AgentLink),
            _t(m.Agent),
        )
        steps += [
            ForgetStep(ctx, ctx.c.agent_id.in_(ids)),
            ForgetStep(team, team.c.agent_id.in_(ids)),
            ForgetStep(links, or_(links.c.source_agent_id.in_(ids), links.c.target_agent_id.in_(ids))),
            ForgetStep(agents, agents.c.id.in_(ids)),
        ]
    return steps
