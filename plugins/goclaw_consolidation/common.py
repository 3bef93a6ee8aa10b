"""Small shared helpers: resolving agents, embedding with graceful degradation, LLM calls
with a fallback, scope filters and atomic file writes."""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlmodel import select

from goclaw.errors import GoclawError
from goclaw.store.models import Agent

log = logging.getLogger("goclaw.consolidation")


def find_agent(engine: Any, agent: str | Agent, session: Any = None) -> Agent | None:
    """The agent by object, id or name (events carry ids; the CLI passes names)."""
    if isinstance(agent, Agent):
        return agent
    if not agent:
        return None

    def _q(s: Any) -> Agent | None:
        row = s.exec(select(Agent).where(Agent.id == agent)).first()
        if row is None:
            row = s.exec(
                select(Agent).where(Agent.name == agent, Agent.tenant_id == engine.settings.tenant_id)
            ).first()
        return row  # type: ignore[no-any-return]

    if session is not None:
        return _q(session)
    with engine.db.session() as s:
        return _q(s)


def require_agent(engine: Any, agent: str | Agent) -> Agent:
    """The caller's agent by name or id, **within the engine's tenant** (issue 12 §20).

    Public paths (CLI, services, tools) use this; an agent of another tenant is "unknown",
    exactly as ``engine.agents.get`` answers for memory search. Workers, which handle events
    of every tenant, use :func:`find_agent`.
    """
    from goclaw.errors import NotFoundError

    if isinstance(agent, Agent):
        if agent.tenant_id != engine.settings.tenant_id:
            raise NotFoundError(f"unknown agent {agent.name!r}")
        return agent
    if not agent:
        raise NotFoundError("no agent given")
    found: Agent = engine.agents.get(agent)
    return found


def in_tenant(engine: Any, agent_id: str) -> bool:
    """Whether ``agent_id`` is an agent of the engine's tenant (id-based public paths)."""
    with engine.db.session() as s:
        row = s.get(Agent, agent_id)
    return row is not None and row.tenant_id == engine.settings.tenant_id


def user_scope(user: str | None) -> list[str]:
    """Rows visible to ``user``: agent level ("") plus the user's own (DESIGN.md §7)."""
    return ["", user] if user else [""]


@dataclass
class Embedded:
    vectors: Any  # float32 (n, dim), L2-normalised
    provider: str
    model: str
    dim: int


def embed(engine: Any, texts: Sequence[str]) -> Embedded | None:
    """Embed ``texts`` with the configured provider; ``None`` when there is none or it fails
    (callers store the row without a vector and search degrades to full text)."""
    if not texts:
        return None
    try:
        provider = engine.embedder()
    except GoclawError as exc:
        log.debug("no embedder: %s", exc)
        return None
    if provider is None:
        return None
    try:
        import numpy as np

        vectors = np.asarray(provider.embed(list(texts)), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        vectors = vectors / norms
    except Exception as exc:  # a provider failing mid-way must not lose the row
        log.warning("embedding failed, storing without vectors: %s", exc)
        return None
    return Embedded(vectors, str(provider.provider), str(provider.model), int(vectors.shape[1]))


def llm_complete(
    engine: Any, messages: Sequence[Mapping[str, Any]], *, timeout: float, **options: Any
) -> str | None:
    """One model call, or ``None`` (no model configured, or the call failed): use the fallback."""
    try:
        llm = engine.llm()
    except GoclawError as exc:
        log.debug("no LLM: %s", exc)
        return None
    if llm is None:
        return None
    try:
        text = llm.complete(messages, timeout=timeout, **options)
    except Exception as exc:
        log.warning("LLM call failed, using the fallback: %s", exc)
        return None
    text = (text or "").strip()
    return text or None


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in a model reply (code fences and prose around it tolerated)."""
    fenced = re.search(r"```(?:json)?\s*(\{[\s\S]*?\})\s*```", text)
    candidates = [fenced.group(1)] if fenced else []
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def atomic_write(path: Path, content: str) -> None:
    """Write ``content`` to ``path`` via a temp file + ``os.replace`` (never a torn file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
