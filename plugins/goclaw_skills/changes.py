"""Knowing when the managed store changed without a query per prompt build.

Two things say the database side of skills may have changed: a committed in-process write to
``skills``, ``skill_versions``, the grant tables or ``system_configs`` (the kernel's
:class:`goclaw.contracts.host.ChangeTracker` watches them), and, for writes by other processes, age: a
checked value is trusted for at most ``[plugins.skills] db_check_seconds`` (0 = check on
every use). So a warm prompt build makes no skills query at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from goclaw.contracts.store import SystemConfig
from goclaw_skills.tables import Skill, SkillAgentGrant, SkillUserGrant, SkillVersion

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

T = TypeVar("T")
WATCHED = (Skill, SkillVersion, SkillAgentGrant, SkillUserGrant, SystemConfig)


class DbChanges:
    """The skills plugin's view of the kernel tracker, with its configurable trust period."""

    def __init__(self, engine: Host, ttl: Callable[[], float]) -> None:
        self._tracker = engine.change_tracker("skills", WATCHED)
        self._ttl = ttl

    @property
    def generation(self) -> int:
        return self._tracker.generation

    def bump(self) -> None:
        self._tracker.bump()

    def get(self, key: str, load: Callable[[], T]) -> T:
        """``load()``, reused until an in-process write or ``db_check_seconds`` pass."""
        return self._tracker.cached(key, self._ttl(), load)

    def close(self) -> None:
        self._tracker.close()
