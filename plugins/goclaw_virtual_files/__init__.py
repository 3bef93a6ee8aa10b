"""Virtual context files: DELEGATION.md, TEAM.md, AVAILABILITY.md (spec §1, §5)."""
