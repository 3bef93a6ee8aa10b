"""Splitting a long line is linear in its length (a quadratic split takes about 115 s on a 16 MB
single-line file), and the split matches the reference rule."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, ClassVar

from goclaw_memory.chunking import chunk_text, split_long_line


def _reference_split(line: str, max_len: int) -> list[str]:
    """The rule as first written (copying the rest of the line at each cut): slow, but the
    definition the linear version must match piece for piece."""
    pieces: list[str] = []
    rest = line
    while len(rest) > max_len:
        window = rest[:max_len]
        cut = max(window.rfind(" "), window.rfind("\t"))
        if cut < max_len // 2:
            cut = max_len
        piece, rest = rest[:cut].rstrip(), rest[cut:].lstrip()
        if piece:
            pieces.append(piece)
    if rest.strip():
        pieces.append(rest)
    return pieces


class _Counted(str):
    """A string that counts the characters its slices and strips copy (into ``copied[0]``),
    and whose copies count too: the work a split does, measured without a clock."""

    copied: ClassVar[list[int]] = [0]

    def _count(self, out: str) -> _Counted:
        _Counted.copied[0] += len(out)
        return _Counted(out)

    def __getitem__(self, key: Any) -> _Counted:  # type: ignore[override]
        return self._count(str.__getitem__(self, key))

    def strip(self, chars: str | None = None) -> _Counted:  # type: ignore[override]
        return self._count(str.strip(self, chars))

    def lstrip(self, chars: str | None = None) -> _Counted:  # type: ignore[override]
        return self._count(str.lstrip(self, chars))

    def rstrip(self, chars: str | None = None) -> _Counted:  # type: ignore[override]
        return self._count(str.rstrip(self, chars))


def _copied(split: Callable[[str, int], list[str]], line: str) -> int:
    _Counted.copied[0] = 0
    split(_Counted(line), 1000)
    return _Counted.copied[0]


def test_long_single_line_is_linear() -> None:
    word = "lorem ipsum dolor sit amet, consectetur adipiscing elit "
    one = (word * (1_000_000 // len(word) + 1))[:1_000_000]
    four = one * 4
    # Work, not time: the split copies each character about twice (its piece, stripped); a split
    # that copies the rest of the line at each cut (the reference) copies about n²/1000.
    assert _copied(split_long_line, four) <= 3 * len(four)  # a piece, then its rstrip
    assert _copied(_reference_split, one) > 100 * len(one)  # the count does see a quadratic split
    chunks = chunk_text(four, 1000)
    assert all(c.start_line == c.end_line == 1 and len(c.text) <= 1000 for c in chunks)
    assert " ".join(c.text for c in chunks).split() == four.split()


def test_split_matches_the_rule_piece_for_piece() -> None:
    rng = random.Random(12)
    alphabet = ["a", "b", "é", " ", "\t", "  ", "\u00a0", "\u3000", "xyz"]
    for _ in range(300):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 400)))
        for max_len in (1, 2, 7, 10, 33, 100):
            if max_len == 1 and line[:1].isspace():
                continue  # a cut at 0 moves nothing here: a naive loop would never end
            assert split_long_line(line, max_len) == _reference_split(line, max_len), (line, max_len)


def test_normal_documents_keep_their_chunks() -> None:
    body = "\n".join(
        ["# Title", "", "short line", "x" * 2500, "", "para " * 300, "", "\tindented  words  " * 90, "end"]
    )
    chunks = chunk_text(body, 1000)
    got = [(c.start_line, c.end_line, len(c.text)) for c in chunks]
    # Recorded from the implementation before the change.
    want = [(1, 3, 19), (4, 4, 1000), (4, 4, 1000), (4, 4, 500), (6, 6, 999), (6, 6, 500)]
    want += [(8, 8, 999), (8, 8, 619), (9, 9, 3)]
    assert got == want
