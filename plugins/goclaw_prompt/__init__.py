"""The system prompt builder and its default sections."""
