"""LLM providers: litellm is the default route."""
