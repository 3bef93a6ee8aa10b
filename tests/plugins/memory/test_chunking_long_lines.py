"""Splitting a long line is linear in its length (a quadratic split takes about 115 s on a 16 MB
single-line file), and the split matches the reference rule."""

from __future__ import annotations

import random
import time

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


def _cpu_seconds(line: str) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        chunk_text(line, 1000)
        best = min(best, time.process_time() - t0)
    return best


def test_long_single_line_is_linear() -> None:
    word = "lorem ipsum dolor sit amet, consectetur adipiscing elit "
    one = (word * (1_000_000 // len(word) + 1))[:1_000_000]
    four = one * 4
    small, large = _cpu_seconds(one), _cpu_seconds(four)
    # Linear: about 4x; a quadratic split would be about 16x (and 115 s at 16 MB).
    assert large < 9 * max(small, 1e-3), (small, large)
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
