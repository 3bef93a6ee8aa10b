"""JSON shapes of the knowledge-graph and episodic records (``goclaw kg ...``,
``goclaw session episodes``, ``memory_expand``).

The rows belong to the plugins that write them (their tables, ``goclaw_schema``); their public
shapes live here, with the attributes a record must have (:class:`EntityRecord`,
:class:`RelationRecord`, :class:`EpisodeRecord`), so the CLI, the tools and any replacement
plugin print the same thing without importing the plugin that wrote them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol


class EntityRecord(Protocol):
    """A knowledge-graph entity as the ``kg`` service returns it."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def entity_type(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def confidence(self) -> float: ...
    @property
    def user_id(self) -> str: ...
    @property
    def source_id(self) -> str: ...
    @property
    def merged_into(self) -> str | None: ...
    @property
    def properties(self) -> dict[str, Any]: ...
    @property
    def valid_from(self) -> datetime | None: ...
    @property
    def valid_until(self) -> datetime | None: ...


class RelationRecord(Protocol):
    """A knowledge-graph relation as the ``kg`` service returns it."""

    @property
    def id(self) -> str: ...
    @property
    def source_entity_id(self) -> str: ...
    @property
    def target_entity_id(self) -> str: ...
    @property
    def relation_type(self) -> str: ...
    @property
    def confidence(self) -> float: ...
    @property
    def user_id(self) -> str: ...
    @property
    def source_id(self) -> str: ...
    @property
    def valid_from(self) -> datetime | None: ...
    @property
    def valid_until(self) -> datetime | None: ...


class EpisodeRecord(Protocol):
    """An episodic summary as the ``episodic`` service returns it."""

    @property
    def id(self) -> str: ...
    @property
    def agent_id(self) -> str: ...
    @property
    def user_id(self) -> str: ...
    @property
    def session_key(self) -> str: ...
    @property
    def source_type(self) -> str: ...
    @property
    def source_id(self) -> str: ...
    @property
    def l0_abstract(self) -> str: ...
    @property
    def summary(self) -> str: ...
    @property
    def key_topics(self) -> Sequence[str]: ...
    @property
    def turn_count(self) -> int: ...
    @property
    def token_count(self) -> int: ...
    @property
    def embedding_model(self) -> str | None: ...
    @property
    def embedding_dim(self) -> int | None: ...
    @property
    def created_at(self) -> datetime | None: ...
    @property
    def expires_at(self) -> datetime | None: ...
    @property
    def promoted_at(self) -> datetime | None: ...


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def entity_dict(e: EntityRecord) -> dict[str, Any]:
    """A KG entity with its validity interval."""
    return {
        "id": e.id,
        "name": e.name,
        "type": e.entity_type,
        "description": e.description,
        "confidence": round(float(e.confidence), 4),
        "user_id": e.user_id,
        "source_id": e.source_id,
        "merged_into": e.merged_into,
        "aliases": list((e.properties or {}).get("aliases", [])),
        "valid_from": _iso(e.valid_from),
        "valid_until": _iso(e.valid_until),
    }


def relation_dict(r: RelationRecord, names: dict[str, str] | None = None) -> dict[str, Any]:
    """A KG relation with its validity interval; ``names`` maps entity ids to names."""
    names = names or {}
    return {
        "id": r.id,
        "source_id": r.source_entity_id,
        "source": names.get(r.source_entity_id, r.source_entity_id),
        "relation": r.relation_type,
        "target_id": r.target_entity_id,
        "target": names.get(r.target_entity_id, r.target_entity_id),
        "confidence": round(float(r.confidence), 4),
        "user_id": r.user_id,
        "episodic_id": r.source_id,
        "valid_from": _iso(r.valid_from),
        "valid_until": _iso(r.valid_until),
    }


def episode_dict(row: EpisodeRecord, score: float | None = None) -> dict[str, Any]:
    """An episodic summary (``score`` added when it comes from a search)."""
    data: dict[str, Any] = {
        "id": row.id,
        "agent_id": row.agent_id,
        "user_id": row.user_id,
        "session_key": row.session_key,
        "source_type": row.source_type,
        "source_id": row.source_id,
        "l0_abstract": row.l0_abstract,
        "summary": row.summary,
        "key_topics": list(row.key_topics or []),
        "turn_count": row.turn_count,
        "token_count": row.token_count,
        "embedding_model": row.embedding_model,
        "embedding_dim": row.embedding_dim,
        "created_at": _iso(row.created_at),
        "expires_at": _iso(row.expires_at),
        "promoted_at": _iso(row.promoted_at),
    }
    if score is not None:
        data["score"] = round(score, 4)
    return data


__all__ = ["EntityRecord", "EpisodeRecord", "RelationRecord", "entity_dict", "episode_dict", "relation_dict"]


def row_json(obj: Any) -> dict[str, Any]:
    """A stored row as the HTTP API returns it: its fields, datetimes in ISO 8601, embeddings
    left out (sessions, KG entities and relations)."""
    data = obj.model_dump() if hasattr(obj, "model_dump") else dict(obj)
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "embedding" or key.startswith("embedding_"):
            continue
        out[key] = value.isoformat() if isinstance(value, datetime) else value
    return out
