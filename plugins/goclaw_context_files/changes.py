"""Cache invalidation for the warm prompt build, which makes no database round trips.

The mechanism is the kernel's :mod:`goclaw.changes`; this module names the watched tables.

Context files, agents, links and teams change rarely and are read on every prompt build, so the
context-file store and the virtual files cache them. Two things invalidate a cache:

* **in-process writes**: a SQLAlchemy ``after_commit`` listener bumps a generation counter
  whenever a committed session wrote a row of a watched table (any ORM write through
  ``engine.db``, whoever made it: ``engine.files``, ``engine.agents.link``, the summoner, ...);
* **other processes** (another CLI, another worker host): a cached entry is trusted for at most
  ``[plugins.context_files] cache_seconds`` (default 5 s); ``0`` disables caching.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from goclaw.contracts.store import Agent, AgentContextFile, AgentLink, Team, TeamMember, UserContextFile

if TYPE_CHECKING:
    from goclaw.contracts.host import ChangeTracker, Host

WATCHED = (Agent, AgentContextFile, UserContextFile, AgentLink, Team, TeamMember)


def tracker(engine: Host) -> ChangeTracker:
    """The engine's tracker for the prompt-side tables (created on first use)."""
    return engine.change_tracker("prompt", WATCHED)


def cache_seconds(engine: Host) -> float:
    """``[plugins.context_files] cache_seconds`` (5 s default; ``[plugins.bootstrap]
    cache_seconds`` still works, with a deprecation warning: the manifest's ``MOVED_SETTINGS``)."""
    try:
        return float(engine.plugin_settings("context_files").cache_seconds)
    except Exception:
        return 5.0
