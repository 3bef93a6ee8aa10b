"""Virtual context files: DELEGATION.md, TEAM.md and AVAILABILITY.md, generated
from agent links and teams on each build, never stored, rendered in ``<system_context>``."""
