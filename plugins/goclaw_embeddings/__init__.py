"""Embedding providers: the offline static default, a local transformer, litellm."""
