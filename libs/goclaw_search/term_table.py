"""A tokenizer's term table (:meth:`goclaw_search.tokenize.Tokenizer.batch`): the terms of a
batch of texts as global term ids, with their stored form (``lex``), for indexing.

Every term seen gets a global id (``terms[gid]``); every distinct *piece* (see
:mod:`goclaw_search.tokenize`) a piece id with its terms' ids and its stored form, computed
once by the tokenizer's rules. A batch then costs, per piece, no Python object at all when its
text is ASCII:

* a text that is not ASCII is normalised first, and stands for an ASCII text when that leaves
  nothing but ASCII and separators (``café`` -> ``cafe``: the same pieces and terms,
  :meth:`~goclaw_search.tokenize.Tokenizer.ascii_form`);
* the batch's ASCII texts are joined, lower-cased and cut at separators by one
  ``bytes.translate``; numpy finds the pieces (runs of bytes other than a space);
* a piece of at most 16 bytes is found by its bytes, read as two 64-bit words (exact: a piece
  holds no NUL byte, so no two pieces share them), in the table's open-addressing hash table,
  and only pieces never seen before go through the tokenizer's rules, all of a batch's at once
  (:meth:`~goclaw_search.tokenize.Tokenizer.ascii_batch`);
* a longer piece, and every piece of a text that stays not ASCII, is looked up by its bytes or
  string in a dictionary;
* the term ids are one gather of the pieces' ids, the stored forms one gather of the pieces'
  stored bytes, cut per text.

Where the compiled module is built (``goclaw_search._vec``, unless ``GOCLAW_SEARCH_NUMPY=1``)
the split, the hash-table lookup, the rules for the new pieces and the gathers of the term ids
and stored forms are its loops (``split``, ``short_ids``, ``number_pieces``, ``gather``) instead: the same
pieces, piece ids and results.

Term ids are numbered as the pieces are first met; a search index numbers its own terms in
order of first occurrence (:meth:`goclaw_search.index.SearchIndex.upsert`), so the index is
the same whatever the global ids are.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from functools import partial
from itertools import chain, compress
from operator import is_, not_
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from goclaw_search.term_ids import TermIds
from goclaw_search.vecq import compiled as _vec

if TYPE_CHECKING:
    from numpy.typing import NDArray


SHORT = 16  # bytes of a piece read as two 64-bit words
_M0 = np.uint64(0x9E3779B97F4A7C15)  # odd multipliers of the words' hash
_M1 = np.uint64(0xC2B2AE3D27D4EB4F)
WIDE = 48  # bytes of a piece's stored form kept in the fixed-width copy
MAX_PIECE_KEY = 1_000  # longer pieces are tokenized each time they occur, never kept
# The compiled split and lookup (goclaw_search._vec, when built and not turned off by
# GOCLAW_SEARCH_NUMPY=1; a build from before they existed lacks them): None for numpy's.
compiled: Any = _vec if hasattr(_vec, "short_ids") else None


class _TermIdOf(dict[str, int]):
    """Term -> global id; reading an unknown term numbers it (the next id, in ``terms``)."""

    def __init__(self, terms: list[str]) -> None:
        super().__init__()
        self.terms = terms

    def __missing__(self, term: str) -> int:
        gid = self[term] = len(self.terms)
        self.terms.append(term)
        return gid


def _words(
    joined: bytes, starts: NDArray[np.int64], size: NDArray[np.int64]
) -> tuple[NDArray[np.uint64], NDArray[np.uint64]]:
    """Bytes ``0..7`` and ``8..15`` of each piece as two 64-bit words (native byte order), the
    bytes past its end zero (a piece holds no NUL byte: two pieces differ in their words)."""
    raw = np.frombuffer(joined + bytes(SHORT), dtype=np.uint8)
    # The 16 bytes from every offset (a strided view: no copy), those of each piece copied out.
    every = np.lib.stride_tricks.as_strided(raw, shape=(len(joined), SHORT), strides=(1, 1), writeable=False)
    window = every[starts]
    window &= _KEEP[size]
    pair = window.view(np.uint64)
    return pair[:, 0], pair[:, 1]


_KEEP = np.array([[255] * k + [0] * (SHORT - k) for k in range(SHORT + 1)], dtype=np.uint8)


_is_none = partial(is_, None)


def _home(w0: NDArray[np.uint64], w1: NDArray[np.uint64], bits: int) -> NDArray[np.int64]:
    """The home slot of each pair of words in a hash table of ``2**bits`` slots (the top bits
    of a multiplicative hash)."""
    h = w0 * _M0
    h ^= w1 * _M1
    h ^= h >> np.uint64(29)
    h *= _M1
    out: NDArray[np.int64] = (h >> np.uint64(64 - bits)).astype(np.int64)
    return out


def _ranges(lo: NDArray[np.int64], count: NDArray[np.int64]) -> NDArray[np.int64]:
    """The positions ``lo[i], lo[i] + 1, ..., lo[i] + count[i] - 1`` of every range, in order."""
    ends = np.cumsum(count)
    out = np.repeat(lo - (ends - count), count)
    out += np.arange(len(out), dtype=np.int64)
    return out


class PieceRules(Protocol):
    """What the table asks of its tokenizer (:class:`goclaw_search.tokenize.Tokenizer`)."""

    def piece_terms(self, key: Any) -> tuple[str, ...]: ...

    def ascii_batch(self, texts: list[str]) -> tuple[list[str], list[int]]: ...

    def ascii_rules(self, text: str) -> tuple[str, ...]: ...

    def word_rules(self) -> tuple[dict[str, str | None], Callable[[str], str | None]]: ...

    def piece_keys(self, text: str) -> list[Any]: ...

    def ascii_form(self, text: str) -> str: ...


class TermTable:
    """See the module docstring. At most :data:`goclaw_search.tokenize.CACHE_SIZE` pieces are
    kept (plus one batch's): then the piece numbering starts again (the term ids stay)."""

    def __init__(self, tokenizer: PieceRules, limit: int) -> None:
        self._tok = tokenizer
        self._limit = limit
        self.terms: list[str] = []
        self.ids = _TermIdOf(self.terms)
        self._restart_pieces()

    def _restart_pieces(self) -> None:
        self._pieces: dict[Any, int] = {}  # longer ASCII pieces (bytes), others (strings)
        # The hash table of the short ASCII pieces: a piece id per slot (-1: empty), and by
        # piece id its two words (:func:`_words`).
        self._bits = 10
        self._slots = np.full(1 << self._bits, -1, dtype=np.int64)
        self._keyed = 0  # pieces in it
        self._w0 = np.zeros(0, dtype=np.uint64)
        self._w1 = np.zeros(0, dtype=np.uint64)
        self._flat = array("i")  # the pieces' term ids, piece after piece
        self._start = array("q")  # where each piece's ids start in _flat
        self._count = array("q")  # how many each piece has
        self._lex = bytearray()  # each piece's stored form and a space ("" for one without terms)
        self._lex_start = array("q")
        self._lex_len = array("q")
        self._wide = np.zeros(0, dtype=f"S{WIDE}")  # the stored forms of up to WIDE bytes, by piece

    @property
    def pieces(self) -> int:
        """Pieces numbered since the numbering last started."""
        return len(self._count)

    def _add(self, flat: list[str], counts: list[int]) -> list[int]:
        """Number pieces of these terms (``flat``: every piece's terms one after the other,
        ``counts``: how many each has, in order); returns their piece ids."""
        ids = self.ids
        distinct = list(dict.fromkeys(flat))
        new = list(compress(distinct, map(not_, map(ids.__contains__, distinct))))
        ids.update(zip(new, range(len(self.terms), len(self.terms) + len(new)), strict=True))
        self.terms.extend(new)
        gids = np.fromiter(map(ids.__getitem__, flat), dtype=np.int64, count=len(flat))
        # A piece's stored form: its terms, each followed by a space ("" for one without terms).
        joined = " ".join(flat)
        stored = joined.encode("utf-8") + b" " if flat else b""
        size = map(len, flat) if len(stored) == len(joined) + 1 else map(len, map(str.encode, flat))
        at = np.zeros(len(flat) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(size, dtype=np.int64, count=len(flat)), out=at[1:])
        ends = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(np.asarray(counts, dtype=np.int64), out=ends[1:])
        lex_len = np.diff(at[ends]) + np.diff(ends)  # the terms' bytes and their spaces
        return self._append(np.diff(ends), gids, lex_len, stored)

    def _append(
        self, counts: NDArray[np.int64], gids: NDArray[np.int64], lex_len: NDArray[np.int64], stored: bytes
    ) -> list[int]:
        """Number pieces of ``counts[i]`` term ids each (``gids``: one piece's after the other)
        and stored forms of ``lex_len[i]`` bytes (``stored``); returns their piece ids."""
        first = len(self._count)
        start = np.cumsum(counts) - counts + len(self._flat)
        self._start.frombytes(start.astype(np.int64).tobytes())
        self._count.frombytes(counts.astype(np.int64).tobytes())
        self._flat.frombytes(gids.astype(np.int32).tobytes())
        lex_start = np.cumsum(lex_len) - lex_len + len(self._lex)
        self._lex_start.frombytes(lex_start.astype(np.int64).tobytes())
        self._lex_len.frombytes(lex_len.astype(np.int64).tobytes())
        self._lex += stored
        return list(range(first, first + len(counts)))

    def batch(self, texts: Sequence[str]) -> list[TermIds]:

        if len(self._count) > self._limit:  # the pieces kept are bounded: numbered again
            self._restart_pieces()
        n = len(texts)
        if not all(map(str.isascii, texts)):  # the same pieces, ASCII where they can be
            texts = list(map(self._tok.ascii_form, texts))
        ascii_at = [i for i, t in enumerate(texts) if t.isascii()]
        if len(ascii_at) == n:
            pid, per_text = self._ascii_pieces(texts)
        else:  # the two kinds apart, then every text's pieces in text order
            other_at = [i for i, t in enumerate(texts) if not t.isascii()]
            pid_a, per_a = self._ascii_pieces([texts[i] for i in ascii_at])
            pid_o, per_o = self._keyed_pieces([texts[i] for i in other_at])
            per_text = np.zeros(n, dtype=np.int64)
            per_text[ascii_at], per_text[other_at] = per_a, per_o
            first = np.zeros(n, dtype=np.int64)  # where each text's pieces are in pid_a + pid_o
            first[ascii_at] = np.cumsum(per_a) - per_a
            first[other_at] = len(pid_a) + np.cumsum(per_o) - per_o
            pid = np.concatenate([pid_a, pid_o])[_ranges(first, per_text)]
        if compiled is not None:  # the gathers and offsets below, in one pass
            i64 = partial(np.frombuffer, dtype=np.int64)
            gids, term_end, raw, lex_end = compiled.gather(
                pid,
                per_text,
                np.frombuffer(self._flat, dtype=np.int32),
                i64(self._start),
                i64(self._count),
                np.frombuffer(self._lex, dtype=np.uint8),
                i64(self._lex_start),
                i64(self._lex_len),
            )
            term_at, lex_at = term_end.tolist(), lex_end.tolist()
        else:
            gids, term_at, raw, lex_at = self._gathered(pid, per_text)
        # Cut at byte offsets: in the decoded text when every byte is a character (ASCII).
        stored: Any = raw.decode("ascii") if raw.isascii() else raw
        words = self.terms
        out = []
        for i in range(n):
            lo, hi = lex_at[i], lex_at[i + 1]
            lex = stored[lo : hi - 1] if hi > lo else ""  # without the last piece's space
            if type(lex) is bytes:
                lex = lex.decode("utf-8")
            out.append(TermIds(gids, term_at[i], term_at[i + 1], lex, words))
        return out

    def _gathered(
        self, pid: NDArray[np.int64], per_text: NDArray[np.int64]
    ) -> tuple[Any, list[int], bytes, list[int]]:
        """The compiled ``gather`` by numpy: the pieces' term ids one after the other, where each
        text's start (and last their end), their stored forms, where each text's start (and end)."""
        bounds = np.zeros(len(per_text) + 1, dtype=np.int64)
        np.cumsum(per_text, out=bounds[1:])
        count = np.frombuffer(self._count, dtype=np.int64)[pid]
        start = np.frombuffer(self._start, dtype=np.int64)[pid]
        gids = np.frombuffer(self._flat, dtype=np.int32)[_ranges(start, count)]
        lex_len = np.frombuffer(self._lex_len, dtype=np.int64)[pid]
        raw = self._stored(pid, lex_len)
        # (the views above are dropped on return: the arrays can grow again)
        term_end = np.zeros(len(pid) + 1, dtype=np.int64)
        np.cumsum(count, out=term_end[1:])
        lex_end = np.zeros(len(pid) + 1, dtype=np.int64)
        np.cumsum(lex_len, out=lex_end[1:])
        return gids, term_end[bounds].tolist(), raw, lex_end[bounds].tolist()

    def _stored(self, pid: NDArray[np.int64], lex_len: NDArray[np.int64]) -> bytes:
        """The stored forms of these pieces one after the other: rows of the fixed-width copy
        (:data:`WIDE` bytes, NUL-padded: a stored form holds no NUL) when every one fits,
        else byte ranges of the flat copy."""
        if len(self._lex_len) and int(lex_len.max(initial=0)) <= WIDE:
            if len(self._wide) < len(self._lex_len):  # the new pieces' rows
                start = np.frombuffer(self._lex_start, dtype=np.int64)[len(self._wide) :]
                size = np.frombuffer(self._lex_len, dtype=np.int64)[len(self._wide) :]
                rows = np.zeros((len(start), WIDE), dtype=np.uint8)
                fits = size <= WIDE
                flat = np.frombuffer(self._lex, dtype=np.uint8)
                col = _ranges(np.zeros(int(fits.sum()), dtype=np.int64), size[fits])
                row = np.repeat(np.flatnonzero(fits), size[fits])
                rows[row, col] = flat[_ranges(start[fits], size[fits])]
                self._wide = np.concatenate([self._wide, rows.view(f"S{WIDE}").reshape(-1)])
            return self._wide[pid].tobytes().replace(b"\0", b"")
        lex_start = np.frombuffer(self._lex_start, dtype=np.int64)[pid]
        return np.frombuffer(self._lex, dtype=np.uint8)[_ranges(lex_start, lex_len)].tobytes()

    def _ascii_pieces(self, texts: Sequence[str]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The piece id of every piece of these ASCII texts, in order, and how many pieces
        each text has."""
        from goclaw_search.tokenize import _ASCII_BYTES

        if not texts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        # One space between texts: no piece crosses from one text to the next.
        joined = " ".join(texts).encode("ascii").translate(_ASCII_BYTES)
        text_start = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)) + 1, out=text_start[1:])
        raw = np.frombuffer(joined, dtype=np.uint8)
        kernels = compiled
        if kernels is not None:  # the same, in one pass (goclaw_search._vec)
            starts, size, per_text = kernels.split(raw, text_start)
            self._reserve(int(np.count_nonzero(size <= SHORT)))
            first = len(self._count)
            pid, won = kernels.short_ids(
                raw, starts, size, self._slots, self._w0, self._w1, self._bits, first
            )
            self._number(joined, starts[won], size[won])
        else:
            edge = np.diff((raw != ord(" ")).view(np.int8), prepend=np.int8(0), append=np.int8(0))
            starts = np.flatnonzero(edge == 1)
            size = np.flatnonzero(edge == -1) - starts
            per_text = np.diff(np.searchsorted(starts, text_start))
            pid = np.full(len(starts), -1, dtype=np.int64)
            short = np.flatnonzero(size <= SHORT)
            if len(short):
                pid[short] = self._short_ids(joined, starts[short], size[short])
        rest = np.flatnonzero(pid < 0)  # the longer pieces
        if len(rest):
            lo, hi = starts[rest].tolist(), (starts[rest] + size[rest]).tolist()
            pid[rest] = self._by_key([joined[a:b] for a, b in zip(lo, hi, strict=True)])
        return pid, per_text

    def _by_key(self, keys: list[Any]) -> NDArray[np.int64]:
        """The piece ids of pieces looked up by their keys (bytes or strings); the new ones
        numbered together, in order of first sight."""
        pieces = self._pieces
        found = list(map(pieces.get, keys))
        if None in found:
            new = [k for k in dict.fromkeys(compress(keys, map(_is_none, found))) if k not in pieces]
            if type(new[0]) is bytes:  # longer ASCII pieces
                size = np.fromiter(map(len, new), dtype=np.int64, count=len(new))
                ids = self._rules(b" ".join(new), np.cumsum(size + 1) - size - 1, size)
            else:
                each = list(map(self._tok.piece_terms, new))
                ids = self._add(list(chain.from_iterable(each)), list(map(len, each)))
            pieces.update((k, i) for k, i in zip(new, ids, strict=True) if len(k) <= MAX_PIECE_KEY)
            fresh = dict(zip(new, ids, strict=True))
            found = [fresh[k] if i is None else i for k, i in zip(keys, found, strict=True)]
        return np.asarray(found, dtype=np.int64)

    def _short_ids(
        self, joined: bytes, starts: NDArray[np.int64], size: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        """The piece ids of the pieces of at most :data:`SHORT` bytes at ``starts``, found by
        their two words (:func:`_words`) in the table's open-addressing hash table (linear
        probing from each piece's home slot until its piece or an empty slot, every piece at
        once). A piece not there takes the empty slot (one piece per slot: the others look at
        it again, it may be theirs); the new pieces are numbered in order of first
        occurrence (as the compiled loop numbers them) and go through the tokenizer's rules,
        in Python, once per new piece."""
        w0, w1 = _words(joined, starts, size)
        self._reserve(len(starts))
        first = len(self._count)  # the next piece id
        pid = np.full(len(w0), -1, dtype=np.int64)
        slot, todo = _home(w0, w1, self._bits), np.arange(len(w0))
        mask, slots = len(self._slots) - 1, self._slots
        new: list[NDArray[np.int64]] = []  # each new piece's first occurrence, by id
        took: list[NDArray[np.int64]] = []  # the slot each took
        fresh = first
        while len(todo):
            at = slots[slot[todo]]
            used = at >= 0
            hit = used.copy()
            hit[used] = (self._w0[at[used]] == w0[todo[used]]) & (self._w1[at[used]] == w1[todo[used]])
            pid[todo[hit]] = at[hit]
            empty = todo[~used]
            if len(empty):  # one piece per empty slot takes it
                taken, once = np.unique(slot[empty], return_index=True)
                won = empty[once]
                ids = np.arange(fresh, fresh + len(won), dtype=np.int64)
                fresh += len(won)
                slots[taken] = ids
                self._w0[ids], self._w1[ids] = w0[won], w1[won]
                pid[won] = ids
                new.append(won)
                took.append(taken)
            # On: a slot held by another piece (the next one); an empty slot just taken by
            # another occurrence stays (it may be the same piece).
            moved = todo[used & ~hit]
            slot[moved] = (slot[moved] + 1) & mask
            todo = todo[pid[todo] < 0]
        if new:  # numbered again in order of first occurrence, as a loop over the pieces would
            won = np.concatenate(new)
            order = np.argsort(won)
            rank = np.empty(len(won), dtype=np.int64)
            rank[order] = np.arange(first, fresh, dtype=np.int64)
            slots[np.concatenate(took)] = rank
            self._w0[rank], self._w1[rank] = w0[won], w1[won]
            fresh_at = pid >= first
            pid[fresh_at] = rank[pid[fresh_at] - first]
            won = won[order]
            self._number(joined, starts[won], size[won])
        return pid

    def _number(self, joined: bytes, starts: NDArray[np.int64], size: NDArray[np.int64]) -> None:
        """The pieces just put in the hash table (in order of their piece ids) through the
        tokenizer's rules (:meth:`_rules`)."""
        if len(starts):
            self._rules(joined, starts, size)
            self._keyed += len(starts)

    def _rules(self, joined: bytes, starts: NDArray[np.int64], size: NDArray[np.int64]) -> list[int]:
        """Number new lower-cased ASCII pieces (``joined[starts[i]:starts[i] + size[i]]``) with
        their terms by the tokenizer's rules
        (:meth:`~goclaw_search.tokenize.Tokenizer.ascii_batch`); returns their piece ids."""
        if compiled is not None and hasattr(compiled, "number_pieces"):  # the same, one loop
            from goclaw_search.tokenize import MAX_TERM_CHARS

            words, word = self._tok.word_rules()
            got = compiled.number_pieces(
                joined, starts, size, words, word, self._tok.ascii_rules, self.ids, self.terms, MAX_TERM_CHARS
            )
            return self._append(*got)
        ends = (starts + size).tolist()
        texts = b" ".join([joined[a:b] for a, b in zip(starts.tolist(), ends, strict=True)])
        return self._add(*self._tok.ascii_batch(texts.decode("ascii").split(" ")))

    def _reserve(self, more: int) -> None:
        """Room for ``more`` new pieces in the hash table (at most half full) and the words."""
        need = len(self._count) + more
        if len(self._w0) < need:
            grown = max(need, 2 * len(self._w0))
            self._w0 = np.concatenate([self._w0, np.zeros(grown - len(self._w0), dtype=np.uint64)])
            self._w1 = np.concatenate([self._w1, np.zeros(grown - len(self._w1), dtype=np.uint64)])
        if 2 * (self._keyed + more) <= len(self._slots):
            return
        ids = self._slots[self._slots >= 0]  # a table large enough, every piece again
        self._bits = max(10, (2 * (self._keyed + more)).bit_length())
        self._slots = np.full(1 << self._bits, -1, dtype=np.int64)
        slot, todo = _home(self._w0[ids], self._w1[ids], self._bits), np.arange(len(ids))
        mask = len(self._slots) - 1
        while len(todo):  # distinct pieces: one per empty slot takes it, the others go on
            free = todo[self._slots[slot[todo]] < 0]
            taken, once = np.unique(slot[free], return_index=True)
            self._slots[taken] = ids[free[once]]
            placed = np.zeros(len(ids), dtype=np.bool_)
            placed[free[once]] = True
            todo = todo[~placed[todo]]
            slot[todo] = (slot[todo] + 1) & mask

    def _keyed_pieces(self, texts: Sequence[str]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """:meth:`_ascii_pieces` for texts that are not ASCII: each piece by its key."""
        keys_of = self._tok.piece_keys
        per_text = list(map(keys_of, texts))
        n_keys = np.fromiter(map(len, per_text), dtype=np.int64, count=len(per_text))
        return self._by_key(list(chain.from_iterable(per_text))), n_keys
