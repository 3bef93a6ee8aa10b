"""Types of the optional C accelerator (``_accel.c``); see goclaw/retrieval/tokenize.py."""

from collections.abc import Callable, Iterable, Sequence

ABI: int

def ascii_terms(
    text: str, table: bytes, cache: dict[bytes, tuple[str, ...]], miss: Callable[[bytes], tuple[str, ...]]
) -> list[str]: ...
def term_ids(vocab: dict[str, int], seqs: Iterable[Sequence[str]], count: int) -> bytes: ...
