"""The system prompt builder and its default sections (spec §5)."""
