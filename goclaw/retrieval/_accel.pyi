"""Types of the optional C accelerator (``_accel.c``); see goclaw/retrieval/tokenize.py."""

from collections.abc import Callable, Iterable, Sequence

ABI: int

class TermTable:
    """Global term ids and the tokenizer's ASCII fast path (``_accel.c``)."""

    def __init__(
        self,
        word: Callable[[str], str | None],
        piece: Callable[[str], Sequence[str]],
        text: Callable[[str], Sequence[str]],
        limit: int,
        plain_digits: bool = False,
    ) -> None: ...
    @property
    def terms(self) -> list[str]: ...
    @property
    def ids(self) -> dict[str, int]: ...
    @property
    def cached(self) -> tuple[int, int]: ...
    def batch(self, texts: list[str]) -> tuple[bytes, bytes, list[str]]: ...
    def terms_of(self, text: str) -> list[str]: ...

def term_ids(vocab: dict[str, int], seqs: Iterable[Sequence[str]], count: int) -> bytes: ...
def number_new(gids: object, known: object, vocab: dict[str, int], table: list[str]) -> bytearray: ...
def postings(
    tids: object, lens: object, first: int, n_terms: int
) -> tuple[bytearray, bytearray, bytearray]: ...
