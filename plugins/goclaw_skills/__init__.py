"""Skills: tiers, parsing, search, slash commands, grants and hot reload."""
