"""V3 memory: durable events, episodic summaries, knowledge graph, workers (spec §17-§20)."""
