"""Auto-injection of recalled memory into the system prompt.

Once per prompt build (full mode only), the user message is searched with the same fused
retrieval as ``memory_search``: the memory service's hybrid search of the
memory files (``engine.memory.search_response``, full text + vectors, with its decay, reranker
and MMR settings) plus the extra tiers the service merges in (``goclaw_memory_search_extra``:
the episodic summaries), so a summary or a note related to the message can be injected.
Trivial messages (greetings, "ok thanks") are skipped.

Whether a hit is injected is decided on one absolute scale for both tiers
(:mod:`goclaw_search.answer`): 0.7 × the share of the message's terms the hit holds + 0.3 × its
cosine (the cosine alone when no hit holds any of its terms, so a match in meaning only can be
injected). The search's own scores rank, but do not say whether anything answers: the memory
fusion divides BM25 by the query's best match, so the best hit of any message sharing a word
scores high. An episodic summary is injected as its L0 abstract with its ``memory_expand`` id
when it scores at least ``auto_inject_threshold`` (0.6); a memory-file chunk as
``path#La-b: text`` (clipped) when it scores at least ``auto_inject_document_threshold`` (0.6);
both chosen on the labelled quick-start set (docs/memory.md, docs/consolidation.md). Memory
files keep the search's order (it ranks better than the absolute score), episodic summaries
theirs, and the two are interleaved by the absolute score of each one's next hit; at most
``auto_inject_max_items`` (5); the whole section, header and wrapper included, is held to
``auto_inject_max_tokens`` (200) as the engine's tokenizer counts them (``engine.tokenizer``),
a hard cap. Per agent (``agents.settings``) with the plugin defaults.

The last two user turns of the session give the recall context: the episodic summaries'
vector query is ``Context: <recent turns>\nQuery: <message>`` (the words still come from the
message alone), with the memory service on as with it off (then the episodic index is searched
directly). The memory files are searched with the message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from goclaw_episodic.settings import agent_setting, settings_of
from goclaw_episodic.store import EpisodicStore
from goclaw_episodic.text import is_trivial
from goclaw_search.answer import answer_scores
from goclaw_text.sentences import clip
from goclaw_text.wrappers import neutralise

log = logging.getLogger("goclaw.episodic")

HEADER = "## Memory Context\n\nRelevant memories from past sessions (use memory_search for details):\n"
# Recalled text is data, not instructions: it sits in its own wrapper, and wrapper tags inside
# it are neutralised (goclaw_text.wrappers). The wrapper counts against the budget.
OPEN, CLOSE = "<memory_context>\n", "\n</memory_context>"
DOCUMENT_CHARS = 240  # a memory-file chunk is clipped to this in the section


def recent_user_turns(engine: Any, session_key: str | None, limit: int = 2) -> str:
    """The last ``limit`` user messages of the session, joined by `` | `` and clipped to 300."""
    if not session_key or not engine.has_service("sessions"):
        return ""
    try:  # through the sessions contract: the table is the memory plugin's
        recent = engine.sessions.recent_messages(session_key, limit=limit, role="user")
    except Exception:  # a failing replacement: no context
        return ""
    joined = " | ".join(" ".join(str(m.content).split()) for m in recent)
    return joined[-300:]


def render_memory_context(
    engine: Any, agent: Any, user: str | None, message: str | None, session_key: str | None = None
) -> str:
    """The section text, or ``""`` when disabled, trivial or nothing relevant."""
    if not agent_setting(engine, agent, "auto_inject_enabled") or is_trivial(message):
        return ""
    assert message is not None
    max_tokens = int(agent_setting(engine, agent, "auto_inject_max_tokens"))
    max_items = settings_of(engine).auto_inject_max_items
    try:
        items = recalled(engine, agent, user, message, session_key, max_items)
    except Exception as exc:  # a prompt must build even when memory search is broken
        log.warning("auto-inject search failed: %s", exc)
        return ""
    count = engine.tokenizer.count

    def fits(candidate: str) -> bool:
        return count(candidate.rstrip("\n") + CLOSE) <= max_tokens

    text = HEADER + OPEN
    added = 0
    for body, suffix in items:
        body = neutralise(body.strip())
        if not body:
            continue
        line = f"- {body}{suffix}\n"
        if not fits(text + line):
            if added == 0:  # the best hit, clipped to what the budget leaves (if anything useful)
                line = _longest_fitting(body, text, fits)
                if line:
                    text += line
                    added += 1
            break
        text += line
        added += 1
        if added >= max_items:
            break
    return text.rstrip("\n") + CLOSE if added else ""


def _longest_fitting(body: str, text: str, fits: Callable[[str], bool]) -> str:
    """The line ``- <body clipped>`` with the most characters of ``body`` (at least 24) for
    which ``fits(text + line)``, or ``""``: a binary search, a token count per step."""
    lo, hi, best = 24, len(body), ""
    while lo <= hi:
        mid = (lo + hi) // 2
        candidate = f"- {clip(body, mid)}\n"
        if fits(text + candidate):
            best, lo = candidate, mid + 1
        else:
            hi = mid - 1
    return best


def recalled(
    engine: Any, agent: Any, user: str | None, message: str, session_key: str | None, max_items: int
) -> list[tuple[str, str]]:
    """What to inject, best first: ``(text, suffix)`` per hit above its tier's threshold."""
    threshold = float(agent_setting(engine, agent, "auto_inject_threshold"))
    recent = recent_user_turns(engine, session_key)
    vector_query = f"Context: {recent}\nQuery: {message.strip()}" if recent else message
    if not engine.has_service("memory"):
        results = EpisodicStore(engine).search(
            agent.id, user, message, limit=max_items * 2, min_score=threshold, vector_query=vector_query
        )
        return [(row.l0_abstract or clip(row.summary, 500), _expand(row.id)) for row, _score in results]
    doc_threshold = settings_of(engine).auto_inject_document_threshold
    limit = max_items * 2
    response = engine.memory.search_response(message, agent, user or None, limit=limit, include_extra=False)
    docs = response.hits
    query_vector = getattr(response, "query_vector", None)  # the memory search's, if it made one
    if recent:  # the extra tiers' vector query carries the recent turns
        query_vector = _context_vector(engine, vector_query, query_vector)
    found = engine.hooks.call(
        "goclaw_memory_search_extra",
        engine=engine,
        query=message,
        agent=agent,
        user=user or None,
        limit=limit,
        query_vector=query_vector,
        for_prompt=True,
        since=None,
        until=None,
    )
    extra = [hit for _plugin, hits in found for hit in hits]
    # Each tier keeps its own order (the memory search ranks its hits better than the absolute
    # score does); the two are interleaved by the absolute score of the next hit of each.
    documents = [
        (
            score,
            f"{hit.path}#L{hit.start_line}-{hit.end_line}: "
            + clip(" ".join(str(hit.snippet or "").split()), DOCUMENT_CHARS),
            "",
        )
        for hit, score in zip(docs, answer_scores(message, docs), strict=True)
        if score >= doc_threshold
    ]
    others = [
        (float(x.score), clip(str(x.text or ""), 500), _expand(x.id) if x.tier == "episodic" else "")
        for x in extra
        if float(x.score) >= threshold
    ]
    return [(body, suffix) for _score, body, suffix in _interleave(documents, others)]


def _interleave(
    first: list[tuple[float, str, str]], second: list[tuple[float, str, str]]
) -> list[tuple[float, str, str]]:
    """Both lists, each in its own order, merged by the score of their next items (ties: ``first``)."""
    out: list[tuple[float, str, str]] = []
    i = j = 0
    while i < len(first) or j < len(second):
        if j >= len(second) or (i < len(first) and first[i][0] >= second[j][0]):
            out.append(first[i])
            i += 1
        else:
            out.append(second[j])
            j += 1
    return out


def _context_vector(engine: Any, vector_query: str, fallback: Any) -> Any:
    """The embedding of the recall query with the recent turns; ``fallback`` (the message's)
    when there is no embedder or it failed."""
    from goclaw.contracts.providers import embed_texts

    found = embed_texts(engine, [vector_query])
    return fallback if found is None else found.vectors[0]


def _expand(episodic_id: Any) -> str:
    return f" (memory_expand id: {episodic_id})"  # the model can ask for the full summary


class MemoryContextSection:
    """Prompt section ``memory_context``, right after Memory Recall (5) in full mode."""

    name = "memory_context"
    order = 5.1
    modes = frozenset({"full"})

    def render(self, ctx: Any) -> str | None:
        request = ctx.request
        return (
            render_memory_context(
                ctx.engine, ctx.agent, ctx.user or None, request.message, request.session_key
            )
            or None
        )
