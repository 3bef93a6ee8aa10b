"""Token counting: a tokenizer from the plugins' registry, characters ÷ 4 as the fallback.

``engine.tokenizer.count(text)`` is what goclaw uses wherever it estimates tokens: session
token counts and so the memory-flush and compaction thresholds, and the skills section's
inline-mode estimate. Context-file budgets stay in characters.

Selected by the top-level setting ``tokenizer`` (``GOCLAW_TOKENIZER``):

* any name a plugin registers with the ``goclaw_tokenizers`` hook: the built-in plugin
  ``goclaw.tokens`` registers tiktoken's ``o200k_base`` (the default) and ``cl100k_base``;
* ``chars`` — characters ÷ 4, rounded up: the documented fallback, also used (with a warning)
  when the named tokenizer is unavailable: its factory fails (tiktoken cannot load its
  encoding), or the plugin whose manifest declares it (``TOKENIZERS``) is not active.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from goclaw.contracts.host import Tokenizer
from goclaw.errors import ConfigError

log = logging.getLogger(__name__)

__all__ = ["CharsTokenizer", "Tokenizer", "make_tokenizer"]


@dataclass(frozen=True)
class CharsTokenizer:
    """Characters ÷ 4, rounded up (Unicode code points)."""

    name: str = "chars"

    def count(self, text: str) -> int:
        return (len(text) + 3) // 4


def make_tokenizer(name: str, registry: dict[str, Any] | None = None, engine: Any = None) -> Tokenizer:
    """The tokenizer called ``name``: a plugin's (``registry``) or chars; chars with a warning
    when it is unavailable (its factory fails, or ``engine``'s plugin declaring it is off)."""
    if registry and name in registry:
        try:
            made: Tokenizer = registry[name](engine)
            return made
        except Exception as exc:  # e.g. no network and no bundled file: degrade, loudly
            reason = f"{type(exc).__name__}: {exc}"
    elif name == "chars":
        return CharsTokenizer()
    elif engine is not None and (owner := engine.plugin_manager.installed.declarer("TOKENIZERS", name)):
        reason = f"plugin {owner} is not active"
    else:
        known = ", ".join(sorted({"chars", *(registry or {})}))
        raise ConfigError(f"unknown tokenizer {name!r}; known: {known}")
    log.warning("tokenizer %s unavailable (%s); counting characters / 4", name, reason)
    return CharsTokenizer()
