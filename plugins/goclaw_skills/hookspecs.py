"""The hooks of the skills plugin: other plugins add places skills come from through these.

``goclaw.skills`` declares them in its manifest (``HOOKSPECS``), so they exist whenever goclaw
is installed, whether the skills plugin is enabled or not; a plugin implements them like any
goclaw hook, with the ``goclaw.hookimpl`` marker. The skill loader calls them through
:func:`tiers` (the kernel's generic ``host.hooks.items``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from goclaw.contracts.host import Host, SkillTier

hookspec = pluggy.HookspecMarker("goclaw")  # goclaw's project name: these are goclaw hooks

HOOK_NAMES = ("goclaw_skill_tiers",)


@hookspec
def goclaw_skill_tiers() -> list[SkillTier] | None:
    """Contribute skill tiers.

    Returns: objects with ``name``, ``priority`` (1 = highest), ``roots(engine)`` and
    ``discover(engine)``. Semantics: all collected, sorted by ``(priority, name)``; a
    duplicate tier name is an error. Default plugins: one per tier,
    ``goclaw.skills.tier.workspace`` (1), ``.project`` (2), ``.personal`` (3),
    ``.global`` (4: ``~/.goclaw/skills`` plus the managed store) and ``.builtin`` (5).
    """


def tiers(host: Host) -> list[SkillTier]:
    """Every plugin's skill tiers, sorted by ``(priority, name)``."""
    return host.hooks.items("goclaw_skill_tiers", "skill tier", lambda t: (t.priority, t.name))
