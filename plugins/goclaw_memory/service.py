"""``engine.memory``: index, search, read and watch an agent's memory files.

Scopes: ``index`` without a user covers the agent folder and every
``users/<U>/`` below it; ``search`` without a user sees agent-level memory only, with a user
the agent level plus that user's own (user hits ×1.2, the user's copy wins a tie on
(path, start line)). Another agent's or user's rows are never returned.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from goclaw.contracts.search import FusionSettings, SearchBackend, SearchQuery
from goclaw.errors import ConfigError, GoclawError, ValidationError
from goclaw_memory.filters import Filters, parse_filters
from goclaw_memory.hit_ids import memory_hit_id
from goclaw_memory.hookspecs import extra_hits
from goclaw_memory.hybrid import MemoryHit, block_hits, build_hits, distinct, fusion_weights
from goclaw_memory.indexer import IndexReport, MemoryIndexer, Progress
from goclaw_memory.paths import resolve_memory_path, validate_user_id
from goclaw_memory.postprocess import postprocess
from goclaw_memory.search_rows import IndexedResult
from goclaw_memory.tier_runner import TierRunner
from goclaw_search.tokenize import query_term_counts

if TYPE_CHECKING:
    from pathlib import Path

    from goclaw.contracts.host import Host
    from goclaw.contracts.providers import EmbeddingProvider
    from goclaw.contracts.store import Agent
    from goclaw_memory.settings import MemorySettings
    from goclaw_memory.watcher import MemoryWatcher

log = logging.getLogger(__name__)

CHANNELS = ("hybrid", "lexical", "vector")


@dataclass
class SearchResponse:
    """Hits plus what the caller should know (e.g. "full-text only: no embedder")."""

    hits: list[MemoryHit]
    channels: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    query_vector: Any = None  # the query's embedding, when the search made one


class MemoryService:
    """The ``memory`` service; one per engine."""

    def __init__(self, engine: Host) -> None:
        self.engine = engine
        self._backend: SearchBackend | None = None
        self._lock = threading.Lock()
        self._rerank_hook: bool | None = None  # whether another plugin reranks too
        self._settings: MemorySettings | None = None
        self._tiers = TierRunner(engine)  # the extra tiers, beside the document search

    # ------------------------------------------------------------------ plumbing
    @property
    def settings(self) -> MemorySettings:
        """``[plugins.memory]``: one object for the engine's life (read once)."""
        if self._settings is None:
            self._settings = self.engine.plugin_settings("memory")
        return self._settings

    @property
    def backend(self) -> SearchBackend:
        """The selected search backend (:mod:`goclaw.contracts.search`), opened on this
        service's index and closed with the engine."""
        if self._backend is None:
            with self._lock:
                if self._backend is None:
                    from goclaw_memory.settings import resolve_backend

                    name = resolve_backend(self.settings.backend, self.engine.db.backend)
                    from goclaw_memory.hookspecs import search_backends

                    registry = search_backends(self.engine)
                    if name not in registry:
                        raise ConfigError(
                            f"unknown memory search backend {name!r}; registered: "
                            f"{', '.join(sorted(registry)) or 'none'}"
                        )
                    from goclaw_memory.foreign_backend import open_backend
                    from goclaw_memory.source import ChunkTableSource

                    # A third party's backend comes wrapped: its failures name its plugin.
                    backend: SearchBackend = open_backend(
                        self.engine, name, registry[name], ChunkTableSource(self.engine)
                    )
                    self.engine.on_close(backend.close)
                    self._backend = backend
        return self._backend

    def _agent(self, agent: str | Agent) -> Agent:
        if isinstance(agent, str):
            return self.engine.agents.get_cached(agent)
        return agent

    def agent_dir(self, agent: str | Agent) -> Path:
        return self.engine.agent_dir(self._agent(agent))

    def embedder(self) -> tuple[EmbeddingProvider | None, str | None]:
        """The configured embedder, or ``(None, reason)`` when there is none or it cannot start."""
        try:
            provider = self.engine.embedder()
        except GoclawError as exc:
            return None, str(exc)
        except Exception as exc:  # a broken provider must not break full-text search
            return None, f"{type(exc).__name__}: {exc}"
        if provider is None:
            return None, 'no embedding provider configured ([plugins.embeddings] provider = "none")'
        return provider, None

    # ------------------------------------------------------------------ indexing
    def index(
        self,
        agent: str | Agent | None = None,
        user: str | None = None,
        *,
        progress: Progress | None = None,
        scopes: list[str] | None = None,
        bulk: bool = False,
    ) -> IndexReport:
        """Index an agent's memory files (every agent when ``agent`` is None).

        ``bulk``: for a large load on a backend that supports it (PostgreSQL), drop the vector
        index for the duration and build it once at the end, much faster than maintaining it
        row by row; vector searches of other agents scan exactly meanwhile.
        """
        if bulk:
            embedder, _reason = self.embedder()
            if embedder is not None:
                with self.backend.bulk_load(int(embedder.dim)):
                    return self.index(agent, user, progress=progress, scopes=scopes)
        if agent is None:
            total = IndexReport(agent="*")
            for a in self.engine.agents.list():
                part = self.index(a, user, progress=progress)
                total.merge(part)
                total.seconds = round(total.seconds + part.seconds, 4)
            return total
        a = self._agent(agent)
        if scopes is None and user is not None:
            scopes = [validate_user_id(user)]
        embedder, reason = self.embedder()
        configured = self.engine.embedding_provider_name()
        indexer = MemoryIndexer(self.engine, self.backend, max_chunk_len=self.settings.max_chunk_len)
        return indexer.index(
            a,
            self.engine.agent_dir(a),
            scopes,
            embedder,
            embedder_error=reason if configured != "none" else None,
            progress=progress,
        )

    # ------------------------------------------------------------------ search
    def search(
        self,
        query: str,
        agent: str | Agent,
        user: str | None = None,
        *,
        limit: int | None = None,
        channel: str = "hybrid",
        filters: Mapping[str, Any] | Filters | None = None,
    ) -> list[MemoryHit]:
        """Hybrid search of the indexed memory documents; see :meth:`search_response`."""
        return self.search_response(query, agent, user, limit=limit, channel=channel, filters=filters).hits

    def search_response(
        self,
        query: str,
        agent: str | Agent,
        user: str | None = None,
        *,
        limit: int | None = None,
        channel: str = "hybrid",
        include_extra: bool = True,
        filters: Mapping[str, Any] | Filters | None = None,
    ) -> SearchResponse:
        """The best ``limit`` hits of the memory files and, with ``include_extra``, the extra
        tiers (past sessions, knowledge-graph facts), each with its id. ``filters``: tags,
        since, until, path, scope (:mod:`goclaw_memory.filters`); ``limit`` counts hits that
        pass them."""
        if channel not in CHANNELS:
            raise ValidationError(f"unknown channel {channel!r}: use hybrid, lexical or vector")
        a = self._agent(agent)
        cfg = self.settings
        limit = int(limit or cfg.max_results)
        if limit < 1:
            raise ValidationError("limit must be at least 1")
        users = ("",) if not user else ("", validate_user_id(user))
        flt = parse_filters(filters, user)
        users = flt.users(users)
        notes: list[str] = []
        used: list[str] = []
        backend = self.backend
        if flt.chunks is not None and not backend.filters:
            raise ValidationError(
                f"memory search backend {backend.name!r} cannot filter by tags, dates or path"
            )
        terms, counts = query_term_counts(query) if query.strip() else ([], [])
        if channel in ("hybrid", "lexical") and terms:
            used.append("lexical")
        qvec, space, embedder = self._query_vector(query, channel, used, notes)
        tiers = None
        if include_extra and query.strip():  # on PostgreSQL they run beside the documents' search
            tiers = self._tiers.start(lambda: self.extra_hits(query, a, user, limit, qvec, flt))
        hits: list[MemoryHit] = []
        reranks = self._reranks(channel)
        if used:
            request = SearchQuery(
                agent_id=a.id,
                users=users,
                text=query,
                terms=tuple(terms),
                term_counts=tuple(counts),
                vector=qvec,
                space=space,
                limit=limit,
                channel=channel,
                fusion=FusionSettings(cfg.fusion, *fusion_weights(cfg, embedder), cfg.user_boost),
                candidates=max(3 * limit, cfg.rerank_candidates) if reranks else 3 * limit,
                rerank_terms=reranks,
                filter=flt.chunks,
            )
            hits = _backend_hits(backend, request, notes)
        if tiers is not None:
            extra = tiers()
            if extra:  # merged before the reranker, so both tiers are reranked alike
                hits = _merge_tiers(hits, extra, len(hits) + len(extra))
        if reranks:
            agent_dir = self.engine.agent_dir(a) if cfg.decay else None
            own = channel == "hybrid" or self._another_reranks()  # one channel: its own order
            rerank = self.reranker(query, a, user, qvec, embedder) if own else _keep_order
            hits = postprocess(cfg, agent_dir, hits, limit, rerank, channel == "hybrid")
        # The first ``limit`` distinct results (nothing else read the candidates when nothing
        # reranks), with their text: a backend's lazy rows are read here, for these hits only.
        hits = distinct(hits, limit)
        for h in hits:  # the stable ids, for the hits returned only
            if h.chunk_id is not None and not h.id:
                h.id = memory_hit_id("m", a.id, h.user_id, f"{h.path}#L{h.start_line}-L{h.end_line}")
        return SearchResponse(hits, used, notes, qvec)

    def extra_hits(
        self, query: str, agent: Agent, user: str | None, limit: int, qvec: Any, flt: Filters
    ) -> list[Any]:
        """The extra tiers' hits (``goclaw_memory_search_extra``) that pass the filters: none
        under a tags or path filter (only memory files have those), only those dated within
        a date range (``extra["date"]`` or ``extra["created_at"]``), only the scope's."""
        chunks = flt.chunks
        if (chunks is not None and (chunks.tags or chunks.path_prefix)) or not query.strip():
            return []
        since = chunks.since if chunks is not None else None
        until = chunks.until if chunks is not None else None
        scoped = None if flt.scope == "agent" else user
        found = extra_hits(self.engine, query, agent, scoped, limit, qvec, since, until)
        if flt.scope == "user":
            found = [h for h in found if getattr(h, "scope", "") == "user"]
        if since or until:  # (again: for a tier that does not take the range itself)
            lo, hi = since or "0000", until or "9999-99-99"
            found = [h for h in found if lo <= _hit_day(h) <= hi]
        return found

    def _reranks(self, channel: str = "hybrid") -> bool:
        """Whether anything will read a reranker's pool of candidates: temporal decay (it
        re-sorts them all before the cut), the built-in reranker or the region penalty (hybrid
        searches only: a ``lexical`` or ``vector`` search returns its channel's own ranking),
        MMR, or another plugin's ``goclaw_memory_rerank``."""
        cfg = self.settings
        own = (cfg.rerank != "none" or cfg.region_penalty != 1.0) and channel == "hybrid"
        return own or cfg.mmr or cfg.decay or self._another_reranks()

    def _another_reranks(self) -> bool:
        """Whether a plugin other than this one implements ``goclaw_memory_rerank`` (the
        plugins of an engine are fixed once it is open)."""
        if self._rerank_hook is None:
            from goclaw_memory import plugin

            found = self.engine.hooks.implementers("goclaw_memory_rerank")
            self._rerank_hook = any(p is not plugin for p in found)
        return self._rerank_hook

    def reranker(
        self, query: str, agent: Agent, user: str | None, query_vector: Any, embedder: Any = None
    ) -> Callable[[list[Any]], list[Any] | None]:
        """What reorders a search's best candidates: this plugin's own reranker, called
        directly, or, when another plugin implements ``goclaw_memory_rerank``, that hook (first
        answer wins; this plugin's own answers last). ``embedder``: the one the search asked."""
        if self._another_reranks():
            engine = self.engine
            args = {"engine": engine, "query": query, "agent": agent, "user": user}
            return lambda hits: engine.hooks.first(
                "goclaw_memory_rerank", hits=hits, query_vector=query_vector, **args
            )
        from goclaw_memory.postprocess import builtin_rerank

        cfg, backend = self.settings, self.backend
        asked = (lambda: embedder) if embedder is not None else (lambda: self.embedder()[0])
        return lambda hits: builtin_rerank(cfg, query, agent.id, hits, query_vector, asked, backend)

    def _query_vector(
        self, query: str, channel: str, used: list[str], notes: list[str]
    ) -> tuple[Any, tuple[str, str, int] | None, EmbeddingProvider | None]:
        """The query's embedding, its space and the embedder, or ``(None, None, None)`` with a
        note saying why (no embedder, or it failed); appends "vector" to ``used`` when there is
        one."""
        qvec, space, embedder = None, None, None
        if channel in ("hybrid", "vector") and query.strip():
            embedder, reason = self.embedder()
            if embedder is None:
                notes.append(
                    f"vector search unavailable ({reason}); "
                    + ("full-text results only" if channel == "hybrid" else "no results")
                )
            else:
                try:
                    qvec = embedder.embed([query])[0]
                    space = (embedder.provider, embedder.model, int(embedder.dim))
                    used.append("vector")
                except Exception as exc:
                    log.debug("query embedding failed", exc_info=True)
                    notes.append(
                        f"vector search failed ({type(exc).__name__}: "
                        f"{' '.join(str(exc).split())[:200]}); "
                        + ("full-text results only" if channel == "hybrid" else "no results")
                    )
        return qvec, space, embedder

    def invalidate(self, agent_id: str | None = None) -> None:
        """The agent's memory rows (every agent's when None) were changed outside an indexing
        run (``forget``, ``repair``): the search backend drops what it derived from them."""
        self.backend.invalidate(agent_id)

    # ------------------------------------------------------------------ checking
    def doctor(self, agent: str | None = None, *, repair: bool = False) -> Any:
        """Check each channel (index freshness, embedding space, full text, vectors, HNSW,
        watcher) and say what to run; ``repair`` fixes what no other command fixes first."""
        from goclaw_memory.doctor import run_doctor

        return run_doctor(self.engine, agent, repair=repair)

    # ------------------------------------------------------------------ reading
    def get(
        self,
        agent: str | Agent,
        path: str,
        user: str | None = None,
        *,
        from_line: int | None = None,
        to_line: int | None = None,
    ) -> dict[str, Any]:
        """Lines ``from_line..to_line`` (1-based, inclusive) of a memory file of this scope."""
        a = self._agent(agent)
        if user:
            validate_user_id(user)
        owner, rel, abs_path = resolve_memory_path(self.engine.agent_dir(a), path, user or None)
        lines = abs_path.read_text(encoding="utf-8", errors="replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        total = len(lines)
        start = 1 if from_line is None else int(from_line)
        end = total if to_line is None else int(to_line)
        if start < 1 or (to_line is not None and end < start):
            raise ValidationError(f"bad line range {from_line}..{to_line}: lines are numbered from 1")
        end = min(end, total)
        text = "\n".join(lines[start - 1 : end]) if start <= end else ""
        return {
            "path": rel,
            "scope": "user" if owner else "agent",
            "from_line": start,
            "to_line": end,
            "total_lines": total,
            "text": text,
        }

    @property
    def writer(self) -> Any:
        """Add, correct, delete and list memories (:class:`goclaw_memory.writer.MemoryWriter`)."""
        from goclaw_memory.writer import MemoryWriter

        return MemoryWriter(self.engine)

    # ------------------------------------------------------------------ watching
    def watch(
        self,
        agent: str | Agent | None = None,
        user: str | None = None,
        *,
        debounce_ms: int | None = None,
        on_index: Callable[[IndexReport], None] | None = None,
        start: bool = True,
    ) -> MemoryWatcher:
        """Re-index memory files as they change (watchdog, 1,500 ms debounce by default).

        Returns the watcher (``stop()`` it, or let ``engine.close()`` do it).
        """
        from goclaw_memory.watcher import MemoryWatcher

        agents = [self._agent(agent)] if agent is not None else self.engine.agents.list()
        watcher = MemoryWatcher(
            self,
            agents,
            user=validate_user_id(user) if user else None,
            debounce_ms=self.settings.watch_debounce_ms if debounce_ms is None else debounce_ms,
            on_index=on_index,
        )
        if start:
            watcher.start()
        self.engine.on_close(watcher.stop)
        return watcher


def _keep_order(hits: list[Any]) -> None:
    """The reranker of a one-channel search: none (the channel's own order stays)."""
    return None


def _backend_hits(backend: SearchBackend, request: SearchQuery, notes: list[str]) -> list[MemoryHit]:
    """The search backend's candidates as hits with their ids (notes appended to ``notes``)."""
    result = backend.search(request)
    notes.extend(result.notes)
    a_id = request.agent_id
    chunks = result.chunks
    if type(result) is IndexedResult:  # this plugin's backends: hits from the index's columns
        return block_hits(chunks, result.block)
    rows = result.rows if result.rows is not None else backend.rows(a_id, [c.id for c in chunks])
    # Every de-duplicated candidate, then decay / rerank / MMR before the cut
    # (goclaw_memory.postprocess).
    hits = build_hits(chunks, rows, len(chunks))
    if len(hits) < request.limit and len(rows) < len(chunks):
        # A backend may leave out the rows it knows cannot be shown (the SQLite backend
        # without a reranker: goclaw_memory.sqlite_backend.shown); de-duplication left too
        # few, so the others are needed after all (or were deleted meanwhile: none come).
        missing = [c.id for c in chunks if c.id not in rows]
        more = backend.rows(a_id, missing)
        if more:
            hits = build_hits(chunks, {**rows, **more}, len(chunks))
    return hits


def _merge_tiers(hits: list[MemoryHit], extra: list[Any], limit: int) -> list[MemoryHit]:
    """Merge extra-tier hits (episodic summaries) with document hits by score."""
    merged: list[MemoryHit] = list(hits)
    for h in extra:
        merged.append(
            MemoryHit(
                path=getattr(h, "path", "") or "",
                start_line=int(getattr(h, "start_line", 0) or 0),
                end_line=int(getattr(h, "end_line", 0) or 0),
                score=float(getattr(h, "score", 0.0) or 0.0),
                scope=getattr(h, "scope", "agent") or "agent",
                snippet=getattr(h, "text", "") or "",
                tier=getattr(h, "tier", None) or "extra",
                id=str(getattr(h, "id", "") or ""),
            )
        )
    merged.sort(key=lambda h: (-h.score, h.tier != "document", h.path, h.start_line))
    return merged[:limit]


def _hit_day(hit: Any) -> str:
    """An extra-tier hit's ISO day (``extra["date"]`` or ``extra["created_at"]``), or ""."""
    extra = getattr(hit, "extra", None) or {}
    return str(extra.get("date") or extra.get("created_at") or "")[:10]
