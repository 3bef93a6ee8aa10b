"""A saved index's vocabulary, looked up without building a ``dict`` of it.

A saved index stores its terms as ``vocab.txt`` (UTF-8, one term per line, line ``i`` is term
``i``). Building the ``term -> id`` dict from it costs ~80 ms of CPU at 100k chunks (345k terms),
on every process's first search, although a search looks up a handful of terms. So the save also
writes each term's 64-bit hash, sorted, and the term id of each (``vocab_hash.npy``,
``vocab_order.npy``): :class:`SavedVocab` finds a term by binary search on its hash and confirms
it by comparing the term's bytes, and builds the dict only when something needs all of it (a
write, a save of a changed index).

The hash is a polynomial over a term's UTF-8 bytes and a closing ``\\n`` (wrapping at 2**64),
then mixed; numpy computes it for every term of ``vocab.txt`` at once (:func:`term_hashes`) and
:func:`term_hash` the same for one term. It need not be a good hash, only the same on both
sides: equal hashes are told apart by the bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["SavedVocab", "term_hash", "term_hashes"]

MASK = (1 << 64) - 1
MUL = 0x100000001B3  # the FNV-1 64-bit prime
MIX = 0xBF58476D1CE4E5B9  # splitmix64's first multiplier
NL = 10  # b"\n"


def term_hash(term: str) -> int:
    """The hash of one term (the same as :func:`term_hashes` gives it in a vocabulary)."""
    h, w = 0, 1
    for b in (*term.encode("utf-8"), NL):
        h = (h + (b + 1) * w) & MASK
        w = (w * MUL) & MASK
    h ^= h >> 31
    h = (h * MIX) & MASK
    return h ^ (h >> 29)


def term_hashes(blob: NDArray[np.uint8]) -> NDArray[np.uint64]:
    """The hash of every term of ``blob`` (``"\\n".join(terms)`` encoded as UTF-8), in order."""
    if not len(blob):  # no terms ("\n".join of none)
        return np.zeros(0, dtype=np.uint64)
    data = np.concatenate([blob, np.array([NL], dtype=np.uint8)])  # each term closed by "\n"
    ends = np.flatnonzero(data == NL)
    starts = np.concatenate([np.zeros(1, dtype=np.int64), ends[:-1] + 1])
    lengths = ends - starts + 1
    weights = np.ones(int(lengths.max()), dtype=np.uint64)
    with np.errstate(over="ignore"):
        weights[1:] = MUL
        weights = np.cumprod(weights, dtype=np.uint64)  # MUL ** position, wrapping at 2**64
        pos = np.arange(len(data), dtype=np.int64) - np.repeat(starts, lengths)
        parts = (data.astype(np.uint64) + np.uint64(1)) * weights[pos]
        h = np.add.reduceat(parts, starts)
        h ^= h >> np.uint64(31)
        h *= np.uint64(MIX)
        h ^= h >> np.uint64(29)
    return h


class SavedVocab:
    """The vocabulary of a loaded index: ``vocab.txt``'s bytes, its terms' hashes sorted and the
    term id of each. Read-only; :meth:`words` lists the terms for the ``term -> id`` dict."""

    def __init__(self, raw: bytes, hashes: NDArray[np.uint64], order: NDArray[np.int64]) -> None:
        self.raw = raw
        self.hashes = hashes
        self.order = order
        self._starts: NDArray[np.int64] | None = None

    @classmethod
    def of(cls, raw: bytes) -> SavedVocab:
        """The table of ``raw`` (``vocab.txt``'s bytes): its hashes computed and sorted."""
        hashes = term_hashes(np.frombuffer(raw, dtype=np.uint8))
        order = np.argsort(hashes, kind="stable")
        return cls(raw, hashes[order], order.astype(np.int64))

    def __len__(self) -> int:
        return len(self.hashes)

    def get(self, term: str) -> int | None:
        """The term's id, or ``None`` when the vocabulary does not hold it."""
        n = len(self.hashes)
        if not n:
            return None
        h = np.uint64(term_hash(term))
        i = int(np.searchsorted(self.hashes, h))
        if i == n or self.hashes[i] != h:
            return None
        starts = self._starts
        if starts is None:
            nl = np.flatnonzero(np.frombuffer(self.raw, dtype=np.uint8) == NL)
            starts = self._starts = np.concatenate([[0], nl + 1, [len(self.raw) + 1]]).astype(np.int64)
        want = term.encode("utf-8")
        while i < n and self.hashes[i] == h:  # equal hashes: told apart by the bytes
            tid = int(self.order[i])
            if self.raw[starts[tid] : starts[tid + 1] - 1] == want:
                return tid
            i += 1
        return None

    def words(self) -> list[str]:
        """Every term, in id order."""
        return self.raw.decode("utf-8").split("\n") if self.raw else []
