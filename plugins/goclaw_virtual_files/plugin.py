"""Plugin ``goclaw.virtual_files``: settings and the cached roster the virtual files share.

Each virtual file is its own default plugin (``goclaw.virtual.delegation``,
``goclaw.virtual.team``, ``goclaw.virtual.availability``); this one holds what they share:
``[plugins.virtual_files]`` and :func:`roster`, the agent's links and teams, cached until the
next write to agents, links or teams (see :mod:`goclaw_context_files.changes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from goclaw import hookimpl
from goclaw.contracts.files import cache_seconds
from goclaw.contracts.files import context_tracker as tracker

if TYPE_CHECKING:
    from goclaw.contracts.host import PromptContext


class VirtualFilesSettings(BaseModel):
    """``[plugins.virtual_files]``"""

    delegation_inline_max: int = Field(
        default=15, ge=0, description="list delegation targets inline up to this many"
    )


@dataclass(frozen=True)
class Peer:
    name: str
    display_name: str
    description: str
    note: str  # link description, or team role


@dataclass(frozen=True)
class TeamInfo:
    name: str
    description: str
    role: str
    mates: tuple[Peer, ...]


@dataclass(frozen=True)
class Roster:
    links: tuple[Peer, ...]
    teams: tuple[TeamInfo, ...]


def roster(ctx: PromptContext) -> Roster:
    """The agent's delegation targets and teams (cached per agent)."""
    engine = ctx.engine
    name = ctx.agent.name

    def _load() -> Roster:
        links = tuple(
            Peer(a.name, a.display_name, a.description, link.description)
            for a, link in engine.agents.links(name)
        )
        teams = tuple(
            TeamInfo(
                t.name,
                t.description,
                role,
                tuple(Peer(m.name, m.display_name, m.description, r) for m, r in mates),
            )
            for t, role, mates in engine.agents.teams_of(name)
        )
        return Roster(links, teams)

    result: Roster = tracker(engine).cached(("roster", ctx.agent.id), cache_seconds(engine), _load)
    return result


def settings(ctx: PromptContext) -> VirtualFilesSettings:
    try:
        cfg = ctx.engine.plugin_settings("virtual_files")
    except Exception:
        return VirtualFilesSettings()
    return cfg if isinstance(cfg, VirtualFilesSettings) else VirtualFilesSettings()


def describe(peer: Peer) -> str:
    label = f"**{peer.name}**" + (f" ({peer.display_name})" if peer.display_name else "")
    desc = " ".join(peer.description.split())
    return f"{label}: {desc}" if desc else label


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    return VirtualFilesSettings


__all__: list[Any] = ["Peer", "Roster", "TeamInfo", "describe", "roster", "settings"]
