"""BM25's parameters on the PostgreSQL side (:mod:`goclaw_memory.pg_postings`), those of the
in-memory engine (:mod:`goclaw_search.index`)."""

from __future__ import annotations

K1, B = 1.2, 0.75
