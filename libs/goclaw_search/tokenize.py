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
import threading
import unicodedata
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from itertools import accumulate, chain, compress, islice, pairwise, repeat
from operator import is_not, not_
from typing import TYPE_CHECKING, Any

from goclaw_search.term_ids import TermIds

if TYPE_CHECKING:
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
_CONNECTORS = "-_./:@#+"
_CONNECTORS_TO_SPACE = str.maketrans(_CONNECTORS, " " * len(_CONNECTORS))
_CONNECTOR_BYTES = bytes.maketrans(_CONNECTORS.encode(), b" " * len(_CONNECTORS))
_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")
_NON_ASCII_SEPARATOR = re.compile(r"[^\w\x00-\x7f]")  # no piece holds one
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff"
_CJK = re.compile(f"[{_CJK_CHARS}]")
_CJK_RUN = re.compile(f"[{_CJK_CHARS}]+|[^{_CJK_CHARS}]+")
MAX_QUERY_TERMS = 48
MAX_TERM_CHARS = 200
CACHE_SIZE = 500_000  # pieces whose terms are cached (a bound, not a target)
TABLE_TERMS = 4_000_000  # distinct terms a term table numbers before the tokenizer starts a new one


def _drop_marks(match: re.Match[str]) -> str:
    return "".join(ch for ch in match.group() if not unicodedata.combining(ch))


def _has_cjk(text: str) -> bool:
    """Whether ``text`` holds a CJK character; a text of Latin-1 characters only (every CJK
    character is above U+10FF) is told by one copy instead of a regex scan."""
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return _CJK.search(text) is not None
    return False


def _strip_accents(word: str) -> str:
    decomposed = unicodedata.normalize("NFD", word)
    if decomposed.isascii():  # no combining mark is ASCII
        return decomposed
    return _NON_ASCII_RUN.sub(_drop_marks, decomposed)


def _make_stemmer() -> Any:
    try:
        import Stemmer  # PyStemmer
    except ImportError:  # pragma: no cover - a dependency; stemming is skipped without it
        return None
    return Stemmer.Stemmer("english")


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
        stemmer = _make_stemmer() if stem else None
        self._stemmer: Callable[[str], str] | None = None if stemmer is None else stemmer.stemWord
        self._stem_words: Callable[[list[str]], list[str]] | None = (
            None if stemmer is None else stemmer.stemWords
        )
        self._stopwords = stopwords
        self._cache = _PieceCache(self._piece)
        self._ascii = _PieceCache(self._ascii_piece)  # the same, keyed by ASCII bytes
        self._words: dict[str, str | None] = {}
        self._table: TermTable | None = None  # made by the first batch
        # One batch at a time: the table's arrays grow in place, and a batch reads them through
        # buffer views (another thread's batch growing them meanwhile fails, or misnumbers).
        self._table_lock = threading.Lock()

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

    def ascii_batch(self, texts: list[str]) -> tuple[list[str], list[int]]:
        """:meth:`ascii_rules` of each of these lower-cased ASCII pieces, as every piece's terms
        one after the other and how many each piece has: the same terms, for many pieces at
        once. A plain word and a code with single connectors (its whole, then its parts' words)
        are the common cases: their terms are found by passes over the whole list (the words
        not seen before stemmed by one ``stemWords`` call); the others (``a--b``, only
        connectors, a blob) go through :meth:`ascii_rules` one by one."""
        toks = list(map(str.strip, texts, repeat(_CONNECTORS)))  # "end." is the token "end"
        # Each one's parts, space-separated (a word: itself), by one translate of them all.
        parts = "\n".join(toks).encode("ascii").translate(_CONNECTOR_BYTES).decode("ascii").split("\n")
        limit = MAX_TERM_CHARS
        pairs = enumerate(zip(toks, parts, strict=True))
        odd = [i for i, (t, p) in pairs if not t or len(t) > limit or "  " in p]
        if odd:
            regular = sorted(set(range(len(texts))).difference(odd))
            toks, parts = [toks[i] for i in regular], [parts[i] for i in regular]
        plain = list(map(str.isalnum, toks))
        codes = list(compress(toks, map(not_, plain)))
        # Each piece's entries: a word; a code, then its parts (the code is its own term).
        seq = [p if w else f"{t} {p}" for t, p, w in zip(toks, parts, plain, strict=True)]
        entries = " ".join(seq).split(" ") if seq else []
        counts = [c + 1 for c in map(str.count, seq, repeat(" "))]
        words = dict.fromkeys(entries)
        deque(map(words.pop, codes, repeat(None)), maxlen=0)  # the rest are plain words
        lookup = self._words_of(list(words))
        lookup.update(zip(codes, codes, strict=True))
        found = list(map(lookup.__getitem__, entries))
        if None in found:  # stopwords: no term
            keep = list(map(is_not, found, repeat(None)))
            found = list(compress(found, keep))
            kept = [0, *accumulate(keep)]
            ends = [0, *accumulate(counts)]
            counts = [kept[b] - kept[a] for a, b in pairwise(ends)]
        if not odd:
            return found, counts
        flat: list[str] = []
        each: list[int] = []
        ends = [0, *accumulate(counts)]
        done = 0  # regular pieces placed
        for j, i in enumerate(odd):  # i - j regular pieces come before the j-th odd one
            flat += found[ends[done] : ends[i - j]]
            each += counts[done : i - j]
            done = i - j
            terms = self.ascii_rules(texts[i])
            flat += terms
            each.append(len(terms))
        flat += found[ends[done] :]
        each += counts[done:]
        return flat, each

    def word_rules(self) -> tuple[dict[str, str | None], Callable[[str], str | None]]:
        """The word cache (word -> term, ``None`` for a stopword) and the rule for a word not in
        it (which caches it while there is room): the parts of :meth:`ascii_rules` that the
        compiled loop over new pieces (``goclaw_search._vec.number_pieces``) calls."""
        return self._words, self._word

    def _words_of(self, words: list[str]) -> dict[str, str | None]:
        """:meth:`_word` of each of these distinct plain words; the ones not seen before are
        stemmed by one call (and cached while the cache has room)."""
        cache = self._words
        known = list(map(cache.__contains__, words))
        seen = list(compress(words, known))
        out = dict(zip(seen, map(cache.__getitem__, seen), strict=True))
        new = list(compress(words, map(not_, known)))
        if not new:
            return out
        stop = self._stopwords
        found: dict[str, str | None] = dict(zip(new, new, strict=True))
        found.update(dict.fromkeys(filter(stop.__contains__, new), None))
        if self._stem_words is not None:
            stem = [w for w in new if len(w) > 2 and w not in stop and not w.isdigit()]
            found.update(zip(stem, self._stem_words(stem), strict=True))
        cache.update(islice(found.items(), max(0, CACHE_SIZE - len(cache))))  # while there is room
        out.update(found)
        return out

    def _normalise(self, text: str) -> str:
        if text.isascii():
            return text.lower()
        text = unicodedata.normalize("NFKC", text).casefold()
        if not _has_cjk(text):
            return _strip_accents(text)
        # Strip accents outside CJK runs only (NFD would split Hangul syllables into jamo).
        return "".join(part if _CJK.match(part) else _strip_accents(part) for part in _CJK_RUN.findall(text))

    def ascii_form(self, text: str) -> str:
        """A text whose pieces and terms are ``text``'s, ASCII where possible: ``text`` itself
        when it is ASCII or when its normalised form (:meth:`_normalise`) holds a character that
        is not ASCII and is a word character (``ø``, CJK); else that normalised form with every
        character that is not ASCII (a separator: ``’``, ``—``) as a space."""
        if text.isascii():
            return text
        normalised = self._normalise(text)
        if normalised.isascii():  # (accents only: no separator to replace)
            return normalised
        folded = _NON_ASCII_SEPARATOR.sub(" ", normalised)
        return folded if folded.isascii() else text

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
        with self._table_lock:
            if self._table is None or len(self._table.terms) > TABLE_TERMS:  # a bound on its memory
                from goclaw_search.term_table import TermTable

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
        return self.query_counts(text)[0]

    def query_counts(self, text: str) -> tuple[list[str], list[int]]:
        """:meth:`query`'s terms and how often each occurs in the query. BM25 counts a term as
        often as the query says it (as Lucene and bm25s do): a long request that repeats its
        topic's words ranks by them."""
        counts = Counter(self.terms(text))  # first occurrence order, as dict.fromkeys
        if not counts:
            counts = Counter(self.terms(text, keep_stopwords=True))
        found = list(counts)[:MAX_QUERY_TERMS]
        return found, [counts[t] for t in found]


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


def query_term_counts(text: str) -> tuple[list[str], list[int]]:
    """:meth:`Tokenizer.query_counts` of the default tokenizer."""
    return default_tokenizer().query_counts(text)
