"""The hooks of the memory plugin: other plugins add search backends and extend a memory search
through these.

``goclaw.memory`` declares them in its manifest (``HOOKSPECS``), so they exist whenever goclaw
is installed, whether the memory plugin is enabled or not; a plugin implements them like any
goclaw hook, with the ``goclaw.hookimpl`` marker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from goclaw.contracts.hooks import SearchHit
    from goclaw.contracts.host import Factory, Host

hookspec = pluggy.HookspecMarker("goclaw")  # goclaw's project name: these are goclaw hooks

HOOK_NAMES = (
    "goclaw_search_backends",
    "goclaw_memory_search_extra",
    "goclaw_memory_rerank",
    "goclaw_memory_expand",
)


@hookspec
def goclaw_search_backends() -> dict[str, Factory] | None:
    """Register search backends by name: ``{"sqlite": factory}``; ``factory(engine)`` builds one.

    Semantics: a registry; the one used is chosen by config (``[plugins.memory] backend``,
    default: the database's backend). A backend implements
    :class:`goclaw.contracts.search.SearchBackend` (writes as well as queries, so it can keep
    an index of its own); the memory service calls its ``open(source)`` with an
    :class:`~goclaw.contracts.search.IndexSource` right after the factory and its ``close()``
    when the engine closes. Default plugins: ``goclaw.memory`` (``sqlite``, ``postgresql``),
    ``goclaw.lancedb`` (``lancedb``, optional).
    """


@hookspec
def goclaw_memory_search_extra(
    engine: Any,
    query: str,
    agent: Any,
    user: str | None,
    limit: int,
    query_vector: Any,
    for_prompt: bool,
    since: str | None,
    until: str | None,
) -> list[SearchHit] | None:
    """Search extra memory tiers (episodic summaries, facts) alongside the indexed documents.

    ``query_vector``: the query's embedding from the configured embedder (as its
    ``embed([query])[0]`` gives it), when the search made one, else ``None``: a tier that
    searches vectors of that embedder uses it instead of embedding the query again. An
    implementation that does not name it is called without it. ``for_prompt``: the hits feed
    the automatic Memory Context of a prompt (every turn), not a ``memory_search``; a tier whose
    hits are not for injection (the knowledge graph's facts) returns none and does no work.
    Returns: hits with ``tier`` set (e.g. ``"episodic"``), scores in 0..1, and an ``id``
    that ``memory_get`` expands (through ``goclaw_memory_expand``, or the ``memory_expand``
    tool for episodic ids); ``extra["date"]`` or ``extra["created_at"]`` (ISO) dates a hit
    for a search's date filter (an undated hit is left out of one; a tags or path filter
    leaves out every extra tier). ``since`` / ``until``: the filter's first and last ISO day
    (``None``: open), for a tier that applies it before its cut to ``limit`` (exact); hits of a
    tier that does not name them are filtered afterwards, from its best ``limit``.
    Semantics: all collected; ``memory_search`` merges them with document hits (tier
    ``"document"``) by score. Default plugins: ``goclaw.episodic`` (episodic summaries,
    tier ``"episodic"``), ``goclaw.kg`` (knowledge-graph facts, tier ``"kg"``).
    """


@hookspec(firstresult=True)
def goclaw_memory_rerank(
    engine: Any, query: str, agent: Any, user: str | None, hits: list[Any], query_vector: Any
) -> list[Any] | None:
    """Rerank the best candidates of a memory search.

    Called once per search, after fusion and temporal decay and before MMR and the cut to the
    limit, with the best ``[plugins.memory] rerank_candidates`` (60) de-duplicated hits, best
    first. A hit has ``path``, ``start_line``, ``end_line``, ``score``, ``scope``, ``snippet``
    and ``tier``; a reranker may set ``score``. ``query_vector``: the query's embedding from
    the configured embedder (float32, as its ``embed([query])[0]`` gives it), or ``None`` when
    the search ran without one (full text only, no embedder, or it failed). An implementation
    that does not name ``query_vector`` is called without it (pluggy passes the arguments an
    implementation names), so one written before it existed keeps working.

    Returns: the same hit objects in the new order (best first; hits left out are dropped,
    objects that were not among ``hits`` are ignored), or ``None`` to keep the order.
    Semantics: first non-None answer wins. Default plugin: ``goclaw.memory`` (trylast): the
    term-overlap/proximity reranker when ``[plugins.memory] rerank = "overlap"``, else ``None``.
    """


@hookspec(firstresult=True)
def goclaw_memory_expand(engine: Any, id: str, agent: Any, user: str | None) -> dict[str, Any] | None:
    """Expand the id of an extra-tier hit for ``memory_get``.

    ``memory_get`` calls it with an id that is not a memory file's (``m:...``); ``agent`` is
    the caller's agent and ``user`` its user: answer only for rows of that scope (raise
    ``goclaw.errors.NotFoundError`` for another scope's). Returns: a JSON-ready dict of what
    the id names, or ``None`` for an id of another tier (then the ``memory_expand`` tool is
    asked, which owns episodic ids).
    Semantics: first non-None answer wins. Default plugin: ``goclaw.kg`` (``kg:`` ids).
    """


def extra_hits(
    engine: Any,
    query: str,
    agent: Any,
    user: str | None,
    limit: int,
    query_vector: Any = None,
    since: str | None = None,
    until: str | None = None,
) -> list[SearchHit]:
    """Every plugin's ``goclaw_memory_search_extra`` hits for a ``memory_search``, in call order."""
    found = engine.hooks.call(
        "goclaw_memory_search_extra",
        engine=engine,
        query=query,
        agent=agent,
        user=user,
        limit=limit,
        query_vector=query_vector,
        for_prompt=False,
        since=since,
        until=until,
    )
    return [hit for _plugin, hits in found for hit in hits]


def search_backends(host: Host) -> dict[str, Factory]:
    """Every plugin's search backends by name (a name two plugins register is an error)."""
    return host.hooks.registry("goclaw_search_backends", "search backend")
