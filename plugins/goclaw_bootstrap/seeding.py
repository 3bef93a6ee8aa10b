"""Plugin ``goclaw.bootstrap``: seeding templates into new agents and users (spec §3).

Not built yet (issue 3): agents are created without seeded files.
"""

from __future__ import annotations
