"""The kernel's own erasure steps for ``goclaw forget`` (the plugins' come from
``goclaw_forget_rows``): per-user context files, queued events with their deliveries, the
``<agent>:<user>`` worker state, and for a whole agent its context files, team memberships,
links and the agent row itself (last)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import or_

from goclaw.contracts import store as m
from goclaw.contracts.schema import ForgetScope, ForgetStep
from goclaw.store.models import Event, EventDelivery


def _t(model: Any) -> Any:
    return model.__table__


def kernel_steps(scope: ForgetScope) -> list[ForgetStep]:
    """Children first; for a whole agent the agent row goes last."""
    ws, ev, d = _t(m.WorkerState), _t(Event), _t(EventDelivery)
    ids = list(scope.agent_ids)
    if scope.whole_agent:
        per_scope = or_(*(ws.c.scope.like(f"{a}:%") for a in ids)) if ids else ws.c.scope.in_([])
    else:
        per_scope = ws.c.scope.in_([f"{a}:{scope.user}" for a in ids])
    ev_ids = ev.select().with_only_columns(ev.c.id).where(scope.clause(ev)).scalar_subquery()
    steps = [
        ForgetStep(ws, per_scope),
        ForgetStep(d, d.c.event_id.in_(ev_ids)),
        ForgetStep(ev, scope.clause(ev)),
        ForgetStep(m.UserContextFile, scope.clause(m.UserContextFile)),
    ]
    if scope.whole_agent:
        ctx, team, links, agents = _t(m.AgentContextFile), _t(m.TeamMember), _t(m.AgentLink), _t(m.Agent)
        steps += [
            ForgetStep(ctx, ctx.c.agent_id.in_(ids)),
            ForgetStep(team, team.c.agent_id.in_(ids)),
            ForgetStep(links, or_(links.c.source_agent_id.in_(ids), links.c.target_agent_id.in_(ids))),
            ForgetStep(agents, agents.c.id.in_(ids)),
        ]
    return steps
