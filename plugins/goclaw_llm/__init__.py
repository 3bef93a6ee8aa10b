"""LLM providers: litellm is the default route (DESIGN.md §5)."""
