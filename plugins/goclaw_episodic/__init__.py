"""Episodic memory: summaries of past sessions, their search, the Memory Context
auto-injection and the episodic, dreaming and retention workers."""
