"""Passive channel memory (spec §18): opt-in per channel, redacted, reviewed before it becomes
episodic memory."""
