"""Skills: tiers, parsing, search, slash commands, grants and hot reload (spec §8-§13)."""
