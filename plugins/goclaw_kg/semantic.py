"""Plugin ``goclaw.workers.semantic``: the SemanticWorker (after the episodic worker).

On ``episodic.created``: extract entities and relations with confidence from the summary —
the LLM returning JSON when a model is configured, else a heuristic (capitalised names typed
by simple cues; relations from "A <verb phrase> B" inside one sentence, co-occurrence
otherwise) — upsert them into ``kg_entities``/``kg_relations`` and publish
``entity.upserted`` with the touched ids, all in one transaction. Upserts make a replay
harmless. Extraction failures fall back to the heuristic; they never lose the event.
"""

from __future__ import annotations

import itertools
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from goclaw import hookimpl
from goclaw.contracts.agents import find_agent
from goclaw.contracts.providers import llm_complete
from goclaw_kg.graph import KnowledgeGraph
from goclaw_kg.settings import agent_setting, settings_of
from goclaw_kg.upserts import relation_type_key
from goclaw_search.tokenize import STOPWORDS
from goclaw_text.entities import typed_mentions
from goclaw_text.redaction import redact_for
from goclaw_text.replies import parse_json_object
from goclaw_text.sentences import clip, sentences

log = logging.getLogger("goclaw.kg")

EXTRACT_PROMPT = (
    "Extract a knowledge graph from the text. Reply with JSON only:\n"
    '{"entities": [{"name": "...", "type": "person|organization|project|place|product|technology|'
    'event|concept", "description": "short", "confidence": 0.0-1.0}],\n'
    ' "relations": [{"source": "entity name", "relation": "snake_case_verb", "target": "entity name", '
    '"confidence": 0.0-1.0}]}\n'
    "Use names exactly as written. Only facts stated in the text."
)
MAX_CHARS = 12000
# Words that never make a relation on their own: the retrieval stopwords plus light verbs and
# pleasantries (one stopword list, goclaw_search's, extended here).
GLUE_WORDS = STOPWORDS | frozenset(
    """
    above after again against all also am any because been before being below between both doing
    down during each few further get got having he hello her here hers herself hey hi him himself
    his itself just let lets like made make may might more most must myself need nor now off ok
    okay once one only other ours ourselves out over own please same shall should some such sure
    thank thanks theirs themselves those through too two under until up use used very want while
    yeah yes yours yourself yourselves
    """.split()  # noqa: SIM905
)
_PREPS = frozenset(["on", "at", "for", "in", "with", "to", "from", "by", "of", "into", "about", "and", "or"])


@dataclass
class Extraction:
    entities: list[dict[str, Any]] = field(default_factory=list)
    relations: list[dict[str, Any]] = field(default_factory=list)
    method: str = "heuristic"


_REL = re.compile(
    r"^\s+((?:[a-z]+\s+){0,2}?(?:[a-z]+(?:s|ed|es)?|is|are|was)(?:\s+(?:on|at|for|in|with|to|"
    r"from|by|of|into|about))?)\s+(?:the\s+|a\s+|an\s+)?$"
)


def heuristic_extract(text: str) -> Extraction:
    """A model-free extraction that still yields useful entities and relations (names and
    types: :mod:`goclaw_text.entities`)."""
    out = Extraction(method="heuristic")
    index: dict[str, dict[str, Any]] = {}
    for sentence in sentences(text):
        found = typed_mentions(sentence, text)[:10]
        for m, etype in found:
            entity = index.get(m.name.lower())
            if entity is None:
                entity = {
                    "name": m.name,
                    "type": etype,
                    "confidence": 0.6,
                    "description": clip(sentence, 160),
                }
                index[m.name.lower()] = entity
                out.entities.append(entity)
            elif entity["type"] == "concept" and etype != "concept":
                entity["type"] = etype  # a later sentence says what it is
        for (a, _ta), (b, _tb) in itertools.pairwise(found):
            between = sentence[a.end : b.start]
            m = _REL.match(between)
            words = m.group(1).split() if m else []
            if m and len(between) <= 40 and not all(w in GLUE_WORDS or w in _PREPS for w in words):
                rel = relation_type_key(m.group(1))
                out.relations.append(
                    {"source": a.name, "relation": rel, "target": b.name, "confidence": 0.55}
                )
            elif len(found) == 2 and len(between) <= 60:  # weak: only the sentence's one pair
                out.relations.append(
                    {"source": a.name, "relation": "related_to", "target": b.name, "confidence": 0.3}
                )
    return out


def llm_extract(engine: Any, text: str) -> Extraction | None:
    chunks = [text] if len(text) <= MAX_CHARS else [c for c in text.split("\n\n") if c.strip()]
    result = Extraction(method="llm")
    for chunk in chunks:
        reply = llm_complete(
            engine,
            [{"role": "system", "content": EXTRACT_PROMPT}, {"role": "user", "content": chunk[:MAX_CHARS]}],
            timeout=settings_of(engine).llm_timeout_seconds,
            temperature=0.2,
        )
        data = parse_json_object(reply) if reply else None
        if data is None:
            return None
        ents, rels = data.get("entities"), data.get("relations")
        result.entities += (
            [e for e in ents if isinstance(e, dict) and e.get("name")] if isinstance(ents, list) else []
        )
        result.relations += [r for r in rels if isinstance(r, dict)] if isinstance(rels, list) else []
    return result if result.entities else None


def _conf(value: Any, default: float) -> float:
    try:
        return min(1.0, max(0.0, float(value)))
    except (TypeError, ValueError):
        return default


class SemanticWorker:
    name = "semantic"
    event_types = frozenset({"episodic.created"})

    def handle(self, event: Any, engine: Any) -> None:
        episodic_id = str(event.payload.get("episodic_id") or "")
        if not engine.has_service("episodic"):  # the summaries are goclaw.episodic's
            log.info("episodic memory is disabled; episodic %s not extracted", episodic_id)
            return
        if not engine.has_service("kg"):  # goclaw.kg is off: its tables may not exist
            return
        ep = engine.episodic.get(episodic_id)
        if ep is None:
            log.info("episodic %s is gone (pruned?); nothing to extract", episodic_id)
            return
        agent = find_agent(engine, ep.agent_id)
        if agent is None or not agent_setting(engine, agent, "consolidation_enabled"):
            return
        source_text = ep.summary
        if ep.key_topics:
            source_text += "\n\nCandidate entities:\n" + "\n".join(f"- {t}" for t in ep.key_topics)
        extraction = llm_extract(engine, source_text) or heuristic_extract(ep.summary)
        clean = _clean_entities(engine, extraction.entities)
        kg = KnowledgeGraph(engine)
        vectors = kg.embed_names(sorted({e["name"] for e in clean}))
        touched = engine.db.run_write(
            lambda session: _store(session, engine, kg, ep, clean, extraction.relations, vectors)
        )
        log.info("semantic: %d entities from episodic %s (%s)", len(touched), ep.id, extraction.method)


def _clean_entities(engine: Any, entities: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Names whitespace-collapsed, redacted when ``redact`` is on, at most 512 characters; a name
    shorter than 2 characters or holding a redaction placeholder is dropped."""
    redact = settings_of(engine).redact
    clean: list[dict[str, Any]] = []
    for e in entities:
        name = " ".join(str(e["name"]).split())
        name = redact_for(engine, name)[:512] if redact else name
        if len(name) < 2 or "[REDACTED" in name:
            continue
        clean.append({**e, "name": name})
    return clean


def _store(
    session: Session,
    engine: Any,
    kg: KnowledgeGraph,
    ep: Any,
    entities: list[dict[str, Any]],
    relations: list[dict[str, Any]],
    vectors: dict[str, Any],
) -> list[str]:
    """Upsert the entities and relations of one summary and publish ``entity.upserted`` with the
    touched ids, in the caller's transaction; the touched entity ids."""
    cfg = settings_of(engine)
    by_name: dict[str, Any] = {}
    touched: list[str] = []
    for e in entities:
        desc = str(e.get("description") or "")
        row, _created = kg.upsert_entity(
            session,
            agent_id=ep.agent_id,
            user_id=ep.user_id,
            name=e["name"],
            entity_type=str(e.get("type") or "concept"),
            description=redact_for(engine, desc)[:1000] if cfg.redact else desc[:1000],
            confidence=_conf(e.get("confidence"), 0.7),
            episodic_id=ep.id,
            embedding=vectors.get(e["name"]),
        )
        by_name[e["name"].lower()] = row
        if row.id not in touched:
            touched.append(row.id)
    exclusive = {relation_type_key(t) for t in cfg.exclusive_relation_types}
    for r in relations:
        src = by_name.get(str(r.get("source", "")).lower())
        dst = by_name.get(str(r.get("target", "")).lower())
        if src is None or dst is None or src.id == dst.id:
            continue
        rtype = relation_type_key(str(r.get("relation") or r.get("type") or "related_to"))
        kg.upsert_relation(
            session,
            agent_id=ep.agent_id,
            user_id=ep.user_id,
            source=src,
            target=dst,
            relation_type=rtype,
            confidence=_conf(r.get("confidence"), 0.6),
            episodic_id=ep.id,
            exclusive=rtype in exclusive,
        )
    if touched:
        payload = {
            "entity_ids": touched,
            "episodic_id": ep.id,
            "agent_id": ep.agent_id,
            "user_id": ep.user_id,
        }
        engine.events.publish(session, "entity.upserted", payload, agent_id=ep.agent_id, user_id=ep.user_id)
    return touched


@hookimpl
def goclaw_consolidation_workers() -> list[Any]:
    return [SemanticWorker()]
