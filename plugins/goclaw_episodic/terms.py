"""What the episodic store and its search (:mod:`goclaw_episodic.search`, on both databases)
share: the stored terms of a summary, and the embedding-space and key-topic helpers.

The search's score is absolute (:mod:`goclaw_search.answer`), so one threshold
(``auto_inject_threshold``) means the same for every query and every agent: ``0.7 × the share
of the query's distinct terms a summary holds + 0.3 × its cosine``. Normalising BM25 by the
query's best match instead would give the best lexical match 0.7 or more whatever it matched:
every question sharing one word with any summary would inject it (docs/consolidation.md,
"Choosing the thresholds").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from goclaw_search.tokenize import default_tokenizer

Space = tuple[str, str, int]  # (provider, model, dimension) of an embedding space


def episode_lex(summary: str, l0_abstract: str, key_topics: Sequence[str] | None) -> str:
    """The stored terms of a summary (``episodic_summaries.lex``; the kernel's migration 0004
    computes the same): summary, L0 abstract and key topics through the shared tokenizer."""
    joined = "\n".join([summary or "", l0_abstract or "", " ".join(str(t) for t in key_topics or [])])
    return " ".join(default_tokenizer().terms(joined))


def topics(value: Any) -> list[str]:
    """``key_topics`` as a list, whether the driver gave a list or JSON text."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return [value]
    return [str(t) for t in value] if isinstance(value, list) else []
