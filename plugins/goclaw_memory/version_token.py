"""Each agent's index version token: a ``worker_state`` row that every transaction writing the
agent's chunks replaces, so any process (and any search backend) can tell whether the chunks
changed since it last looked."""

from __future__ import annotations

import json
from typing import Any

VERSION_WORKER = "goclaw.memory.index"


def parse_token(value: Any) -> str:
    """The token of a stored ``worker_state`` value (a ``{"token": ...}`` object, its JSON text,
    or a bare token)."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    if isinstance(value, dict):
        return str(value.get("token", ""))
    return "" if value is None else str(value)
