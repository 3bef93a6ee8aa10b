"""goclaw's text library: deterministic text analysis shared by the memory features.

Sentence splitting and clipping (:mod:`~goclaw_text.sentences`), model-free entity names and
types (:mod:`~goclaw_text.entities`), the extractive summary (:mod:`~goclaw_text.summary`),
secret redaction (:mod:`~goclaw_text.redaction`), the prompt's wrapper tags
(:mod:`~goclaw_text.wrappers`) and JSON read out of a model's reply
(:mod:`~goclaw_text.replies`). It imports nothing of goclaw, so it can be used and tested on
its own; feature-specific text rules stay in their plugin.
"""
