"""One LLM call with a fallback (DESIGN.md §5): the configured provider's text, or ``None`` when no
model is configured or the call fails, so the caller uses its deterministic fallback. Shared by
episodic summaries, KG extraction, channel memory and dreaming (issue 13 item 4)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from goclaw.errors import GoclawError

if TYPE_CHECKING:
    from goclaw.engine import Engine

log = logging.getLogger(__name__)

__all__ = ["llm_complete"]


def llm_complete(
    engine: Engine, messages: Sequence[Mapping[str, Any]], *, timeout: float, **options: Any
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
