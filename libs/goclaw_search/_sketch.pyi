"""Types of the optional C passage sketcher (``_sketch.c``); see
plugins/goclaw_embeddings/static_passages.py."""

from collections.abc import Callable, Mapping, Sequence
from typing import Any

ABI: int

class Sketcher:
    """Passage sketches of texts, with a piece -> token ids cache (``_sketch.c``)."""

    def __init__(
        self,
        matrix: Any,
        tokenize: Callable[[list[str]], Sequence[Sequence[int]]],
        *,
        vocab: Mapping[str, int] | None = None,
        unk: int = -1,
        drop: int = -1,
        max_chars: int = 100,
        max_tokens: int = 0,
    ) -> None: ...
    def batch(self, texts: Sequence[str]) -> tuple[bytes, bytes, bytes, bytes, bytes, bytes] | None:
        """(tokens u4, seg_len u4, refs u4, nref u1, norms f4, counts i8 x 4 per text), or None
        while another call of this sketcher is tokenising."""
        ...
    def clear(self) -> None: ...
    def size(self) -> tuple[int, int, int]: ...
