"""Deterministic text analysis shared by the memory features (issue 13 item 4).

A kernel mechanism like :mod:`goclaw.retrieval.tokenize`: sentence splitting and clipping
(:mod:`~goclaw.nlp.sentences`), model-free entity names and types (:mod:`~goclaw.nlp.entities`)
and the extractive summary (:mod:`~goclaw.nlp.summary`). Episodic memory, the knowledge graph
and channel memory each use them without importing one another. Feature-specific text rules
stay in their plugin (the L0 abstract in ``goclaw_episodic``, name similarity in ``goclaw_kg``).
"""
