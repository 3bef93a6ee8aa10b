"""The context-file contract: names, order and cache invalidation shared by every plugin that
reads context files, so that those plugins never import each other.

The context-file store (``goclaw.context_files``), the seeding plugin (``goclaw.bootstrap``), the
prompt (``goclaw.prompt``) and the virtual files meet here instead of importing each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from goclaw.contracts.host import ChangeTracker, Host

# The stored context files, in the order the prompt renders them.
KNOWN_FILES: tuple[str, ...] = (
    "AGENTS.md",
    "SOUL.md",
    "TOOLS.md",
    "IDENTITY.md",
    "USER.md",
    "BOOTSTRAP.md",
    "USER_PREDEFINED.md",
)
# Virtual files are generated per build and never stored; their names are reserved.
VIRTUAL_FILES: tuple[str, ...] = ("DELEGATION.md", "TEAM.md", "AVAILABILITY.md")
BOOTSTRAP_FILE = "BOOTSTRAP.md"
DEFAULT_CACHE_SECONDS = 5.0
TRACKER_NAME = "prompt"


def context_tracker(engine: Host) -> ChangeTracker:
    """The engine's change tracker for the prompt-side tables (agents, context files, links,
    teams): a cache keyed on it is invalidated by any committed write to them."""
    from goclaw.contracts.store import Agent, AgentContextFile, AgentLink, Team, TeamMember, UserContextFile

    return engine.change_tracker(
        TRACKER_NAME, (Agent, AgentContextFile, UserContextFile, AgentLink, Team, TeamMember)
    )


def cache_seconds(engine: Host) -> float:
    """How long a prompt-side cache may trust an entry written by another process: the context-
    file service's ``cache_seconds`` (``[plugins.context_files] cache_seconds``), else 5 s."""
    if not engine.has_service("files"):
        return DEFAULT_CACHE_SECONDS
    return float(getattr(engine.service("files"), "cache_seconds", DEFAULT_CACHE_SECONDS))
