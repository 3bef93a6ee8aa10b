"""Plugin ``goclaw.tokens``: tiktoken's encodings as tokenizers (hook ``goclaw_tokenizers``).

``o200k_base`` (GPT-4o; the default of the top-level setting ``tokenizer``) and ``cl100k_base``
(GPT-4) load offline: litellm ships both files, and when ``TIKTOKEN_CACHE_DIR`` is not set this
plugin points tiktoken at litellm's bundled copies instead of letting it download.

tiktoken is imported when a tokenizer is first built, not when the plugin loads. An encoding
that cannot load makes its factory raise, and goclaw counts characters ÷ 4 with a warning
(:mod:`goclaw.tokenizer`); so does the default setting with this plugin disabled. Against o200k,
characters ÷ 4 undercounts Chinese about 2.7×, Japanese 3.1× and code 1.5×, so a flush or
compaction threshold measured in ÷4 tokens fires late.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from goclaw import hookimpl
from goclaw_tokens.manifest import TOKENIZERS

_LOADED: dict[str, Any] = {}
_LOCK = threading.Lock()


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
        if name not in _LOADED:
            if not os.environ.get("TIKTOKEN_CACHE_DIR"):
                bundled = bundled_tiktoken_dir()
                if bundled:
                    os.environ["TIKTOKEN_CACHE_DIR"] = bundled
            import tiktoken

            _LOADED[name] = tiktoken.get_encoding(name)
        return _LOADED[name]


class TiktokenTokenizer:
    """A tiktoken encoding (``o200k_base``, ``cl100k_base``), loaded when built."""

    def __init__(self, encoding: str) -> None:
        self.name = encoding
        self._enc = load_encoding(encoding)

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._enc.encode(text, disallowed_special=()))


def _factory(encoding: str) -> Any:
    return lambda engine: TiktokenTokenizer(encoding)


@hookimpl
def goclaw_tokenizers() -> dict[str, Any]:
    return {name: _factory(name) for name in TOKENIZERS}
