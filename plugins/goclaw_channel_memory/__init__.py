"""Passive channel memory: opt-in per channel, redacted, reviewed before it becomes
episodic memory."""
