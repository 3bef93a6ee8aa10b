"""Which prompt mode a request gets.

Subagent, cron and heartbeat sessions (``agent:<id>:subagent:...``, ``agent:<id>:cron:...``,
``agent:<id>:heartbeat...``) must never see SOUL.md, USER.md or BOOTSTRAP.md, so for those keys
an explicit ``mode`` cannot widen the prompt: the resolver's answer (``minimal`` by default)
wins. Other requests get their explicit mode, or the resolver's answer when they name none.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from goclaw.contracts.hooks import PromptRequest

log = logging.getLogger(__name__)


def is_subagent_or_cron(session_key: str | None) -> bool:
    """``agent:<id>:subagent:...``, ``agent:<id>:cron:...`` or a heartbeat,
    ``agent:<id>:heartbeat...`` (no colon needed after it), case-insensitive."""
    parts = (session_key or "").lower().split(":")
    return (
        len(parts) >= 3
        and parts[0] == "agent"
        and (parts[2] in {"subagent", "cron"} or parts[2].startswith("heartbeat"))
    )


def pick_mode(request: PromptRequest, resolve: Callable[[PromptRequest], str | None]) -> str:
    """The mode of one build: the session key's mode beats an explicit one (see module doc)."""
    if request.mode and not is_subagent_or_cron(request.session_key):
        return request.mode
    mode = resolve(request) or "full"
    if request.mode and request.mode != mode:
        log.warning(
            "prompt mode %r ignored: session key %r is a subagent, cron or heartbeat session (mode %r)",
            request.mode,
            request.session_key,
            mode,
        )
    return mode
