"""Token counting: a real BPE tokenizer by default, characters ÷ 4 as the fallback.

``engine.tokenizer.count(text)`` is what goclaw uses wherever it estimates tokens: session
token counts and so the memory-flush and compaction thresholds, and the skills section's
inline-mode estimate. Context-file budgets stay in characters.

Selected by the top-level setting ``tokenizer`` (``GOCLAW_TOKENIZER``):

* ``o200k_base`` (default) and ``cl100k_base`` — tiktoken's encodings (GPT-4o / GPT-4). They
  load offline: litellm ships both files, and when ``TIKTOKEN_CACHE_DIR`` is not set goclaw points
  tiktoken at litellm's bundled copies instead of letting it download;
* ``chars`` — characters ÷ 4, rounded up: the documented fallback, also used (with a warning)
  when tiktoken cannot load its encoding;
* any name a plugin registers with the ``goclaw_tokenizers`` hook.

Against o200k, characters ÷ 4 undercounts Chinese about 2.7×, Japanese 3.1× and code 1.5×, so a
flush or compaction threshold measured in ÷4 tokens fires late.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from goclaw.contracts.host import Tokenizer

log = logging.getLogger(__name__)

BUILTIN = ("o200k_base", "cl100k_base", "chars")
__all__ = ["BUILTIN", "CharsTokenizer", "TiktokenTokenizer", "Tokenizer", "make_tokenizer"]
_ENCODINGS: dict[str, Any] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class CharsTokenizer:
    """Characters ÷ 4, rounded up (Unicode code points)."""

    name: str = "chars"

    def count(self, text: str) -> int:
        return (len(text) + 3) // 4


def bundled_tiktoken_dir() -> str | None:
    """litellm's folder of tiktoken encodings (found without importing litellm), if present."""
    from importlib.util import find_spec

    try:
        spec = find_spec("litellm")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    return str(folder) if folder.is_dir() else None


def load_encoding(name: str) -> Any:
    """A tiktoken encoding, loaded once per process, offline when litellm's copy is there."""
    with _LOCK:
        if name not in _ENCODINGS:
            if not os.environ.get("TIKTOKEN_CACHE_DIR"):
                bundled = bundled_tiktoken_dir()
                if bundled:
                    os.environ["TIKTOKEN_CACHE_DIR"] = bundled
            import tiktoken

            _ENCODINGS[name] = tiktoken.get_encoding(name)
        return _ENCODINGS[name]


class TiktokenTokenizer:
    """A tiktoken encoding (``o200k_base``, ``cl100k_base``)."""

    def __init__(self, encoding: str) -> None:
        self.name = encoding
        self._enc = load_encoding(encoding)

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._enc.encode(text, disallowed_special=()))


def make_tokenizer(name: str, registry: dict[str, Any] | None = None, engine: Any = None) -> Tokenizer:
    """The tokenizer called ``name``: a plugin's (``registry``), a tiktoken encoding, or chars."""
    from goclaw.errors import ConfigError

    if registry and name in registry:
        made: Tokenizer = registry[name](engine)
        return made
    if name == "chars":
        return CharsTokenizer()
    if name in ("o200k_base", "cl100k_base"):
        try:
            return TiktokenTokenizer(name)
        except Exception as exc:  # no network and no bundled file: degrade, loudly
            reason = f"{type(exc).__name__}: {exc}"
            log.warning("tokenizer %s unavailable (%s); counting characters / 4", name, reason)
            return CharsTokenizer()
    known = ", ".join(sorted({*BUILTIN, *(registry or {})}))
    raise ConfigError(f"unknown tokenizer {name!r}; known: {known}")
