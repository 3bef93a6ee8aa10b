"""``[plugins.memory]``: settings for indexing, search, sessions and the flush."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

DEFAULT_FLUSH_PROMPT = (
    "Pre-compaction memory flush. Store durable memories now: append the decisions, preferences, "
    "facts, URLs, paths and dates worth keeping from the conversation to memory/YYYY-MM-DD.md "
    "(create it if needed) with the append_file tool; read_file shows what is already there. "
    "Keep it short and factual. If nothing is worth storing, reply with NO_REPLY."
)


class FlushSettings(BaseModel):
    """``[plugins.memory.flush]``: when the pre-compaction flush runs and what it may do."""

    enabled: bool = True
    soft_threshold_tokens: int = Field(default=4_000, ge=0)
    reserve_tokens_floor: int = Field(default=20_000, ge=0)
    max_iterations: int = Field(default=5, ge=1, le=20)
    timeout: float = Field(default=90.0, gt=0, description="seconds for the whole LLM loop")
    prompt: str = DEFAULT_FLUSH_PROMPT
    recent_messages: int = Field(default=10, ge=1, description="messages shown to the flush model")


def resolve_backend(name: str, database: str) -> str:
    """The search backend ``name`` selects on a ``database`` (``sqlite`` / ``postgresql``).

    ``auto`` is the exact ranking on both: ``sqlite`` on SQLite (the in-process engine over its
    own file) and ``postgresql`` on PostgreSQL, where the database computes the same full-text
    and hybrid ranking exactly and a process holds nothing per agent beyond bounded caches, so
    any number of processes on any number of hosts share one database and a new process answers
    its first search without building or loading an index. ``inprocess`` stays an option for a
    single host: the in-process engine over PostgreSQL, an index per process, lower latency (the
    ``postgresql`` backend's hybrid searches take about 1.5× its time at 100k chunks) and an exact
    vector channel where ``postgresql``'s alone returns HNSW's neighbours (docs/postgres.md
    compares them)."""
    if name != "auto":
        return name
    return "sqlite" if database == "sqlite" else "postgresql"


class MemorySettings(BaseModel):
    """``[plugins.memory]``"""

    backend: str = Field(
        default="auto",
        description="search backend: auto (sqlite on SQLite, postgresql on PostgreSQL), sqlite, "
        "postgresql (the exact ranking computed by the database, nothing per process beyond bounded "
        "caches: a new process answers its first search without building an index), inprocess "
        "(the exact in-memory engine on any database, for a single host), lancedb (the lancedb "
        "extra) or a plugin's",
    )
    max_chunk_len: int = Field(default=1000, ge=50, description="characters per chunk at most")
    max_results: int = Field(default=6, ge=1, le=1000)
    fusion: Literal["weighted", "rrf", "minmax", "zscore"] = Field(
        default="weighted",
        description="how the full-text and vector channels are fused (docs/memory.md has the comparison)",
    )
    # 0.7 / 0.3 won the comparison in docs/memory.md: the only weights that beat full text alone
    # on recall@10 and MRR on every labelled set with the default (static) embedder; the
    # reverse, 0.3 / 0.7, ranked below full text alone.
    # An embedder may bring its own weights (the onnx one: 0.5 / 0.5), used unless either is set
    # here (goclaw_memory.hybrid.fusion_weights).
    text_weight: float = Field(
        default=0.7, ge=0, description="weight of the full-text channel (the onnx embedder's own: 0.5)"
    )
    vector_weight: float = Field(
        default=0.3, ge=0, description="weight of the vector channel (the onnx embedder's own: 0.5)"
    )
    user_boost: float = Field(default=1.2, ge=0)
    candidate_factor: int = Field(
        default=4,
        ge=1,
        description="backend postgresql: candidates per channel = factor × limit (the other "
        "built-in backends score every chunk)",
    )
    min_candidates: int = Field(
        default=40, ge=1, description="backend postgresql: candidates per channel at least"
    )
    hnsw_ef_search: int = Field(
        default=0,
        ge=0,
        le=1000,
        description="backend postgresql: HNSW candidate list per vector search (0 = the candidates in "
        "a hybrid search, 2 x candidates + 40 for the vector channel); higher finds more of the "
        "exact nearest chunks, slower",
    )
    pg_connect_timeout: float = Field(
        default=10.0,
        gt=0,
        description="backends inprocess and postgresql on PostgreSQL: seconds to open the connection "
        "the searches read from (whole seconds, at least 2)",
    )
    pg_list_cache_mb: float = Field(
        default=64.0,
        ge=0,
        description="backend postgresql: megabytes of recently read posting lists each process keeps "
        "(common terms' lists, a search's largest read; 0 turns it off)",
    )
    pg_statement_timeout: float = Field(
        default=10.0,
        gt=0,
        description="backends inprocess and postgresql on PostgreSQL: seconds a search's read may wait "
        "for the server (a lock, a hung server); then the search fails with an error instead of waiting",
    )
    # Post-processing of the fused candidates; defaults chosen by the
    # measurements in docs/memory.md "After fusion: reranker, passages, decay and MMR".
    mmr: bool = Field(
        default=False, description="maximal-marginal-relevance diversification of the fused candidates"
    )
    mmr_lambda: float = Field(
        default=0.7, ge=0, le=1, description="MMR: 1 = relevance only, 0 = diversity only"
    )
    decay: bool = Field(default=False, description="temporal decay: older memories score lower")
    decay_half_life_days: float = Field(
        default=30.0, gt=0, description="decay: a memory this many days old scores half"
    )
    decay_evergreen: list[str] = Field(
        default_factory=lambda: ["MEMORY.md", "memory.md"],
        description="decay: glob patterns (path within the scope's folder) of files that never "
        "decay; dated notes (memory/YYYY-MM-DD.md) age from their name, other files from their mtime",
    )
    rerank: Literal["none", "overlap"] = Field(
        default="overlap",
        description="built-in reranker when no plugin implements goclaw_memory_rerank: none, or "
        "overlap (query-term coverage and proximity, no network)",
    )
    rerank_weight: float = Field(
        default=0.375, ge=0, le=1, description="overlap reranker: share of the score it may take away"
    )
    rerank_candidates: int = Field(
        default=60, ge=1, le=200, description="how many of the best candidates a reranker sees"
    )
    rerank_passages: int = Field(
        default=20,
        ge=0,
        le=200,
        description="overlap reranker, weighted fusion: how many of its best hits get the vector "
        "share of their score re-measured on their best passage (a list item or paragraph with its "
        "headings; 0 = off); only with an embedder that scores passages locally (the bundled static model)",
    )
    # Per-query weights, on: with the static embedder the vector channel is worth more on some
    # queries than on others, and its own cosines say which. When the best candidate's cosine
    # stands out from the median of the best 20 (the gap), the match in meaning is real; when
    # they are all alike (the usual case of a weak embedder), full text should decide. Vector
    # weight + 3 × (gap − 0.06), the weights' sum kept: SciFact +0.0054 nDCG@10, Cranfield
    # +0.0052, CISI +0.0056, LoCoMo −0.0018 recall@10, planted facts 0.909 / 0.807 (from
    # 0.907 / 0.803). Every slope 2.5-3.5 and gap 0.05-0.07 gains on the three IR sets; no
    # fixed pair of weights, reranker weight, pool or fusion method gained on all of them
    # without losing the planted facts (benchmarks/results/2026-12-06-fusion-public.md).
    adaptive_weight: float = Field(
        default=3.0,
        ge=0,
        description="overlap reranker, weighted fusion: each search's vector weight + this × (the gap "
        "between the best candidate cosine and the median of the best 20, minus adaptive_gap), the "
        "weights' sum kept (0 = off; not with an embedder that brings its own weights)",
    )
    adaptive_gap: float = Field(
        default=0.06, ge=0, le=1, description="adaptive_weight: the gap at which the weights are as set"
    )
    # Off by default: on LoCoMo, where a session file holds many separate turns, every value
    # below 1 loses recall (0.9: -0.014); on SciFact (a file per abstract) it gains at most
    # +0.0011 (benchmarks/results/2026-12-05-public-eval.md).
    region_penalty: float = Field(
        default=1.0,
        ge=0,
        le=1,
        description="after the reranker: a file's second region (chunks neither overlapping nor "
        "next to a better one of the file) scores x this, its third x this squared, ... "
        "(1 = off; 0 = every file's best region first); for files that are one document each",
    )
    watch: bool = Field(default=False, description="start a watcher for every agent when the engine opens")
    watch_debounce_ms: int = Field(default=1500, ge=0)
    context_window: int = Field(default=200_000, ge=1, description="tokens (sessions)")
    max_history_share: float = Field(
        default=0.85, gt=0, le=1, description="compaction runs above context_window × this share"
    )
    keep_last: int = Field(default=4, ge=0, description="messages kept verbatim by a compaction")
    flush: FlushSettings = Field(default_factory=FlushSettings)
