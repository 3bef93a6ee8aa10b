"""The one tokenizer of goclaw's search library: memory chunks, episodic summaries,
skills and KG dedup all index and query with it, on SQLite (in-memory BM25) and PostgreSQL
(``tsvector`` over the same terms), so every backend agrees on what a term is.

Rules, in order:

* Unicode NFKC, case-folded; Latin diacritics removed (``café`` = ``cafe``).
* **Codes stay whole**: a run of letters/digits joined by ``- _ . / : @ # +`` (``TCK-4471``,
  ``src/app.py``, ``user_id``, ``v1.2.3``, ``ops@example.com``) yields the whole code as one term
  *and* its parts. The whole code is rare, so its IDF is high: a query for ``TCK-4471`` ranks the
  chunk holding that exact code above chunks that merely mention ``4471`` or ``TCK``.
* Words are stemmed with the Snowball English stemmer (``running``/``runs`` -> ``run``) when
  PyStemmer is installed; English stopwords are dropped (a query of only stopwords keeps them).
* CJK (Han, kana, Hangul) has no spaces: each run becomes overlapping character bigrams (a
  single character stays a unigram), the usual choice of CJK full-text engines.

Pure Python + PyStemmer (a C extension). Speed comes from caching each distinct *piece* of
text (a run of word characters and connectors) with its terms: indexing costs a split and a
dictionary look-up per piece (see :class:`Tokenizer`). :meth:`Tokenizer.batch` hands a bulk
load its terms as integer ids (:class:`TermIds`): each distinct piece is numbered once with its
terms' ids, so a batch's ids are one numpy gather, with no Python object per term.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import lru_cache
from itertools import chain
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from goclaw_search.term_table import TermTable

__all__ = [
    "STOPWORDS",
    "TermIds",
    "Tokenizer",
    "default_tokenizer",
    "lex_of",
    "query_terms",
    "terms",
]

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)

_WORD = re.compile(r"[^\W_]+")
_TOKEN = re.compile(r"[^\W_]+(?:[-_./:@#+][^\W_]+)*")
_CONNECTOR = re.compile(r"[-_./:@#+]")
# A *piece*: a maximal run of word characters and connectors. No token crosses a piece's edge
# (every token character is a piece character), so the tokens of a text are the tokens of its
# pieces in order, and a piece's terms can be cached whole.
_PIECE = re.compile(r"[\w\-./:@#+]+")
# ASCII text: every character that is neither a letter, a digit nor a connector becomes a space,
# so ``str.split`` yields the pieces (C speed, no regex).
_ASCII_PIECES = str.maketrans(
    {chr(c): " " for c in range(128) if not (chr(c).isalnum() or chr(c) in "-_./:@#+")}
)
# The same for ASCII text as bytes, lower-casing in the same pass: splitting bytes makes
# bytes objects, about twice as fast as splitting a str into str objects.
_ASCII_BYTES = bytes(
    ord(" ") if not (chr(c).isalnum() or chr(c) in "-_./:@#+") else ord(chr(c).lower()) for c in range(128)
) + bytes(range(128, 256))
_CONNECTORS_TO_SPACE = str.maketrans("-_./:@#+", " " * 8)
_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff"
_CJK = re.compile(f"[{_CJK_CHARS}]")
_CJK_RUN = re.compile(f"[{_CJK_CHARS}]+|[^{_CJK_CHARS}]+")
MAX_QUERY_TERMS = 48
MAX_TERM_CHARS = 200
CACHE_SIZE = 500_000  # pieces whose terms are cached (a bound, not a target)
TABLE_TERMS = 4_000_000  # distinct terms a term table numbers before the tokenizer starts a new one


def _drop_marks(match: re.Match[str]) -> str:
    return "".join(ch for ch in match.group() if not unicodedata.combining(ch))


def _strip_accents(word: str) -> str:
    decomposed = unicodedata.normalize("NFD", word)
    if decomposed.isascii():  # no combining mark is ASCII
        return decomposed
    return _NON_ASCII_RUN.sub(_drop_marks, decomposed)


def _make_stemmer() -> Callable[[str], str] | None:
    try:
        import Stemmer  # PyStemmer
    except ImportError:  # pragma: no cover - a dependency; stemming is skipped without it
        return None
    return Stemmer.Stemmer("english").stemWord  # type: ignore[no-any-return]


class Tokenizer:
    """Text -> index terms (see the module docstring). Instances are cheap; use
    :func:`default_tokenizer` to share the term cache.

    The fast path: ASCII text is lower-cased and split into pieces by one ``bytes.translate``
    + ``bytes.split`` (bytes objects are about twice as cheap to make as str ones, and a
    piece's terms are cached under its bytes); other text is normalised and split by one
    regex. Each distinct piece is tokenized and stemmed once, its terms cached (up to
    :data:`CACHE_SIZE` pieces), so a text's terms are a cache look-up per piece and one
    flattening."""

    version = "goclaw-1"  # stored with persisted indexes: a change forces a rebuild

    def __init__(self, *, stem: bool = True, stopwords: frozenset[str] = STOPWORDS) -> None:
        self._stemmer = _make_stemmer() if stem else None
        self._stopwords = stopwords
        self._cache = _PieceCache(self._piece)
        self._ascii = _PieceCache(self._ascii_piece)  # the same, keyed by ASCII bytes
        self._words: dict[str, str | None] = {}
        self._table: TermTable | None = None  # made by the first batch

    def _word(self, word: str) -> str | None:
        """The term of one plain word (``None``: a stopword); each distinct word is looked at
        once (the parts of codes repeat: ``tck`` in every ``TCK-nnnn``)."""
        words = self._words
        if word in words:
            return words[word]
        term: str | None = word
        if word in self._stopwords:
            term = None
        elif self._stemmer is not None and len(word) > 2 and not word.isdigit():
            term = self._stemmer(word)
        if len(words) < CACHE_SIZE:
            words[word] = term
        return term

    def _token(self, tok: str) -> tuple[str, ...]:
        """The terms of one token: a word's term, nothing for a stopword, or for a code the
        whole code followed by its parts' terms. CJK runs become bigrams."""
        if len(tok) > MAX_TERM_CHARS:  # a blob, not a word: its parts only (tsvector caps lexemes)
            return tuple(t for p in _WORD.findall(tok) if len(p) <= MAX_TERM_CHARS and (t := self._word(p)))
        if _CJK.search(tok) is not None:
            return tuple(_cjk_terms(tok, self._word))
        if _CONNECTOR.search(tok) is None:
            term = self._word(tok)
            return () if term is None else (term,)
        return (tok, *(t for p in _WORD.findall(tok) if (t := self._word(p)) is not None))

    def _piece(self, piece: str) -> tuple[str, ...]:
        """The terms of one piece (its tokens' terms in order), cached."""
        out: tuple[str, ...]
        word = piece if piece.isalnum() else piece.strip("-_./:@#+")  # "end." is the token "end"
        if word.isascii() and word.isalnum() and len(word) <= MAX_TERM_CHARS:  # one plain word
            term = self._word(word)
            out = () if term is None else (term,)
        else:
            token = self._token
            toks = _TOKEN.findall(piece)
            out = token(toks[0]) if len(toks) == 1 else tuple(t for tok in toks for t in token(tok))
        cache = self._cache
        if len(cache) < CACHE_SIZE:
            cache[piece] = out
        return out

    def _ascii_piece(self, piece: bytes) -> tuple[str, ...]:
        """:meth:`_piece` of an ASCII piece (bytes from :meth:`terms`' fast path), cached."""
        out = self.ascii_rules(piece.decode("ascii"))
        if len(self._ascii) < CACHE_SIZE:
            self._ascii[piece] = out
        return out

    def ascii_rules(self, text: str) -> tuple[str, ...]:
        """The terms of one lower-cased ASCII piece (not cached here)."""
        tok = text if text.isalnum() else text.strip("-_./:@#+")  # "end." is the token "end"
        if len(tok) > MAX_TERM_CHARS:
            return self._cache[text]
        if tok.isalnum():  # one plain word
            term = self._word(tok)
            return () if term is None else (term,)
        # a code (TCK-4471, src/app.py) when its connectors are single: whole + parts
        parts = tok.translate(_CONNECTORS_TO_SPACE).split()
        if len(parts) - 1 == len(tok) - sum(map(len, parts)):
            words, word = self._words, self._word  # parts repeat: mostly a dict hit
            return (tok, *[t for p in parts if (t := words[p] if p in words else word(p)) is not None])
        return self._cache[text]  # "a--b", or nothing but connectors: the general rules

    def _normalise(self, text: str) -> str:
        if text.isascii():
            return text.lower()
        text = unicodedata.normalize("NFKC", text).casefold()
        if _CJK.search(text) is None:
            return _strip_accents(text)
        # Strip accents outside CJK runs only (NFD would split Hangul syllables into jamo).
        return "".join(part if _CJK.match(part) else _strip_accents(part) for part in _CJK_RUN.findall(text))

    def pieces(self, text: str) -> list[str]:
        """The normalised pieces of ``text`` (runs of word characters and connectors)."""
        if text.isascii():
            return text.lower().translate(_ASCII_PIECES).split()
        return _PIECE.findall(self._normalise(text))

    def terms(self, text: str, *, keep_stopwords: bool = False) -> list[str]:
        """Every term of ``text`` in order (repeats kept: term frequencies count)."""
        if keep_stopwords:
            return self._terms_keeping_stopwords(text)
        if text.isascii():
            pieces = text.encode("ascii").translate(_ASCII_BYTES).split()
            return list(chain.from_iterable(map(self._ascii.__getitem__, pieces)))
        return self._unicode_terms(text)

    def _unicode_terms(self, text: str) -> list[str]:
        return list(chain.from_iterable(map(self._cache.__getitem__, self.pieces(text))))

    def piece_keys(self, text: str) -> list[Any]:
        """The pieces of ``text`` as the piece caches key them: ASCII bytes (lower-cased, split
        by :data:`_ASCII_BYTES`) for an ASCII text, normalised strings otherwise; a piece's terms
        are ``_ascii[key]`` or ``_cache[key]`` (:meth:`piece_terms`)."""
        if text.isascii():
            return text.encode("ascii").translate(_ASCII_BYTES).split()
        return self.pieces(text)

    def piece_terms(self, key: Any) -> tuple[str, ...]:
        """The terms of a piece of :meth:`piece_keys` (cached as :meth:`terms` caches them)."""
        return self._ascii[key] if type(key) is bytes else self._cache[key]

    def batch(self, texts: Sequence[str]) -> list[TermIds]:
        """:meth:`terms` of each text, for indexing: as global term ids of this tokenizer's term
        table (:class:`TermIds`, a sequence of the same terms), with the stored form (``lex``)
        made alongside (:class:`goclaw_search.term_table.TermTable`)."""
        from goclaw_search.term_table import TermTable

        if self._table is None or len(self._table.terms) > TABLE_TERMS:  # a bound on its memory
            self._table = TermTable(self, CACHE_SIZE)
        return self._table.batch(texts)

    def _terms_keeping_stopwords(self, text: str) -> list[str]:
        """:meth:`terms`, where a token with no term (a stopword) stands for itself."""
        out: list[str] = []
        for tok in _TOKEN.findall(self._normalise(text)):
            out.extend(self._token(tok) or (tok,))
        return out

    def query(self, text: str) -> list[str]:
        """The distinct terms of a query, at most :data:`MAX_QUERY_TERMS`; a query made only of
        stopwords keeps them (they then match nothing in an index that dropped them, which is
        the honest answer)."""
        terms = list(dict.fromkeys(self.terms(text)))
        if not terms:
            terms = list(dict.fromkeys(self.terms(text, keep_stopwords=True)))
        return terms[:MAX_QUERY_TERMS]


class TermIds(Sequence[str]):
    """The terms of one text as global term ids (:meth:`Tokenizer.batch`): a sequence of the
    terms (``table[gid]`` for each id), ``lex`` the terms joined by spaces (the form
    ``memory_chunks.lex`` stores). Ids live in ``base[lo:hi]``, one array for a whole batch of
    texts, so :meth:`goclaw_search.index.SearchIndex.upsert` takes a batch's ids at once."""

    __slots__ = ("base", "hi", "lex", "lo", "table")

    def __init__(self, base: NDArray[np.int32], lo: int, hi: int, lex: str, table: list[str]) -> None:
        self.base = base
        self.lo = lo
        self.hi = hi
        self.lex = lex
        self.table = table

    @property
    def ids(self) -> NDArray[np.int32]:
        return self.base[self.lo : self.hi]

    def __len__(self) -> int:
        return self.hi - self.lo

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self.table[g] for g in self.ids[i].tolist()]
        return self.table[int(self.base[self.lo + range(len(self))[i]])]

    def __iter__(self) -> Iterator[str]:
        return map(self.table.__getitem__, self.ids.tolist())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, TermIds)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TermIds({list(self)!r})"


def lex_of(terms: Sequence[str]) -> str:
    """The stored form of a text's terms (``memory_chunks.lex``): joined by single spaces."""
    return terms.lex if type(terms) is TermIds else " ".join(terms)


class _PieceCache(dict[Any, tuple[str, ...]]):
    """Piece (str, or ASCII bytes) -> terms; a missing piece is computed (and stored while
    there is room)."""

    def __init__(self, compute: Callable[[Any], tuple[str, ...]]) -> None:
        super().__init__()
        self._compute = compute

    def __missing__(self, piece: Any) -> tuple[str, ...]:
        return self._compute(piece)


def _cjk_terms(tok: str, word: Callable[[str], str | None]) -> Iterable[str]:
    for part in _CJK_RUN.findall(tok):
        if _CJK.match(part):
            if len(part) == 1:
                yield part
            else:
                yield from (part[i : i + 2] for i in range(len(part) - 1))
        else:
            t = word(part)
            if t is not None:
                yield t


@lru_cache(maxsize=1)
def default_tokenizer() -> Tokenizer:
    """The process-wide tokenizer (shares the stem cache)."""
    return Tokenizer()


def terms(text: str) -> list[str]:
    """:meth:`Tokenizer.terms` of the default tokenizer."""
    return default_tokenizer().terms(text)


def query_terms(text: str) -> list[str]:
    """:meth:`Tokenizer.query` of the default tokenizer."""
    return default_tokenizer().query(text)
