"""Reading structured data out of a language model's free-text reply."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["parse_json_object"]


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
