"""The term-table tokenizer produces exactly the terms of the implementation
it replaced: a frozen copy of that implementation lives here and both run over a varied corpus
(codes, paths, e-mails, CJK, accents, numbers, punctuation, mixed case, blobs, stopwords)."""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from goclaw_search import tokenize as fast
from goclaw_search.tokenize import STOPWORDS, Tokenizer

# --------------------------------------------------------------------------- frozen reference
# libs/goclaw_search/tokenize.py as of c8a0810 (before the speed-up), verbatim minus docstrings.

_WORD = re.compile(r"[^\W_]+")
_TOKEN = re.compile(r"[^\W_]+(?:[-_./:@#+][^\W_]+)*")
_CONNECTOR = re.compile(r"[-_./:@#+]")
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff"
_CJK = re.compile(f"[{_CJK_CHARS}]")
_CJK_RUN = re.compile(f"[{_CJK_CHARS}]+|[^{_CJK_CHARS}]+")
MAX_QUERY_TERMS = 48
MAX_TERM_CHARS = 200


def _strip_accents(word: str) -> str:
    decomposed = unicodedata.normalize("NFD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _make_stemmer() -> Callable[[str], str] | None:
    try:
        import Stemmer
    except ImportError:  # pragma: no cover
        return None
    return Stemmer.Stemmer("english").stemWord  # type: ignore[no-any-return]


class FrozenTokenizer:
    def __init__(self, *, stem: bool = True, stopwords: frozenset[str] = STOPWORDS) -> None:
        self._stemmer = _make_stemmer() if stem else None
        self._stopwords = stopwords
        self._cache: dict[str, tuple[str, ...]] = {}

    def _word(self, word: str) -> str | None:
        if word in self._stopwords:
            return None
        if self._stemmer is not None and len(word) > 2 and not word.isdigit():
            return self._stemmer(word)
        return word

    def _token(self, tok: str) -> tuple[str, ...]:
        if len(tok) > MAX_TERM_CHARS:
            out = tuple(t for p in _WORD.findall(tok) if len(p) <= MAX_TERM_CHARS and (t := self._word(p)))
        elif _CJK.search(tok) is not None:
            out = tuple(_cjk_terms(tok, self._word))
        elif _CONNECTOR.search(tok) is None:
            term = self._word(tok)
            out = () if term is None else (term,)
        else:
            out = (tok, *(t for p in _WORD.findall(tok) if (t := self._word(p)) is not None))
        if len(self._cache) < 500_000:
            self._cache[tok] = out
        return out

    def _normalise(self, text: str) -> str:
        if text.isascii():
            return text.lower()
        text = unicodedata.normalize("NFKC", text).casefold()
        if _CJK.search(text) is None:
            return _strip_accents(text)
        return "".join(part if _CJK.match(part) else _strip_accents(part) for part in _CJK_RUN.findall(text))

    def terms(self, text: str, *, keep_stopwords: bool = False) -> list[str]:
        norm = self._normalise(text)
        toks = _TOKEN.findall(norm)
        get = self._cache.get
        mapped = [get(tok) for tok in toks]
        if None in mapped:
            mapped = [m if m is not None else self._token(tok) for m, tok in zip(mapped, toks, strict=True)]
        if keep_stopwords:
            mapped = [m or (tok,) for m, tok in zip(mapped, toks, strict=True)]
        return [t for m in mapped for t in m]  # type: ignore[union-attr]

    def query(self, text: str) -> list[str]:
        terms = list(dict.fromkeys(self.terms(text)))
        if not terms:
            terms = list(dict.fromkeys(self.terms(text, keep_stopwords=True)))
        return terms[:MAX_QUERY_TERMS]


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


# --------------------------------------------------------------------------- corpus

FIXED = [
    "",
    "   \n\t ",
    "Ticket TCK-4471 touches src/app.py and ops@example.com",
    "running runs RUNNING Runner's",
    "Café NAÏVE façade jalapeño Ångström Øre straße ŒUVRE ﬁnance ①②③ Ⅻ ｆｕｌｌｗｉｄｔｈ",
    "東京の天気 는 한국어 текст Ελληνικά ＴＣＫ－４４７１ 漢字abc漢字 カタカナ-123",
    "v1.2.3 user_id __init__ a--b ..x.. -lead trail- ::1 #123 C++ c# +1 @handle a/b/c/ x@y",
    "https://example.com/path?q=1&r=2#frag mailto:someone@example.org 192.168.0.1:8080",
    "the and of to is a an THE The. Why? Who! what; which, whom: would",
    "numbers 0 1 22 333 4444 3.14159 1e10 -7 +7 12:30 2026-12-03T06:00:00Z",
    "x" * 250 + "-part-" + "y" * 10,
    "a-" * 150 + "b",
    "word\u0301 e\u0301 \u0301lead combining\u0327\u0327 dotless ı İstanbul ǅemal ß ẞ",
    "tab\tsep\x0bvtab\x0cff\rcr\x1cfs\x1dgs\x1eRS\x1fus\x85nel\u2028ls\u3000ideo",
    "emoji 🙂 test 👍🏽 flags 🇫🇷 zwj 👩‍💻 under_score_ emoji🙂word",
    "mixed CamelCase camelCase HTTPServer XMLHttpRequest iPhone eBay",
    "symbols $%^&*()[]{}<>|\\\"'`~ ;; ,, «quotes» “curly” ‘single’ — – … ·",
    "Ｈｅｌｌｏ　Ｗｏｒｌｄ ㈱ ㍻ ﬀ ᵃ ² ½ ℃ №",
    "Arabic العربية Hebrew עברית Thai ภาษาไทย Hindi हिन्दी",
    "nul\x00inside and \ud800 lone",
]

ALPHABET = (
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    + list("-_./:@#+")
    + list(" \n\t,;!?()[]'\"=*&%$")
    + list("éÉèàçüÖñøåßæœıİ")
    + ["\u0301", "\u0308", "\u0327"]
    + list("東京天気の日本語カタカナひらがな한국어")
    + list("абвгдАБВГДαβγΑΒΓ")
    + list("１２３ＡＢＣｆｉ①ﬁ")
    + ["🙂", "\u200d", "\u00a0", "\u3000"]
)
WORDS = [
    "the",
    "and",
    "running",
    "Customers",
    "TCK-4471",
    "src/app.py",
    "ops@example.com",
    "user_id",
    "v1.2.3",
    "café",
    "東京",
    "한국어",
    "naïve",
    "Deploy",
    "printer",
    "outage",
    "2026-12-03",
    "C++",
    "#42",
    "über",
    "e\u0301clair",
]


def _random_texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(0, 40)):
            if rng.random() < 0.5:
                parts.append(rng.choice(WORDS))
            else:
                parts.append("".join(rng.choices(ALPHABET, k=rng.randint(1, 12))))
            parts.append(rng.choice([" ", " ", " ", "\n", ", ", ". ", "-", "/", "", "\t"]))
        out.append("".join(parts))
    return out


def _synthetic_notes() -> list[str]:
    import sys

    bench = Path(__file__).resolve().parents[3] / "benchmarks"
    sys.path.insert(0, str(bench))
    try:
        from synth_memory import generate
    finally:
        sys.path.remove(str(bench))
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp), n_chunks=300, n_facts=20, seed=3)
        return [p.read_text(encoding="utf-8") for p in sorted(Path(tmp).rglob("*.md"))]


@pytest.mark.parametrize("stem", [True, False])
def test_fast_terms_equal_the_frozen_implementation(stem: bool) -> None:
    corpus = FIXED + _random_texts(11, 1500) + _synthetic_notes()
    ref, new = FrozenTokenizer(stem=stem), Tokenizer(stem=stem)
    for text in corpus:
        assert new.terms(text) == ref.terms(text), repr(text)
        assert new.terms(text) == ref.terms(text), repr(text)  # again, from the cache
        assert new.terms(text, keep_stopwords=True) == ref.terms(text, keep_stopwords=True), repr(text)
        assert new.query(text) == ref.query(text), repr(text)
    for text, got in zip(corpus, new.batch(corpus), strict=True):  # the indexing form
        assert list(got) == ref.terms(text) and got.lex == " ".join(got), repr(text)


def test_fast_terms_equal_on_ascii_text() -> None:
    """ASCII text takes the bytes path (one translate + split): every ASCII character, controls
    and separators included, in random mixes with codes, paths and stopwords."""
    rng = random.Random(21)
    ascii_words = [w for w in WORDS if w.isascii()] + [
        "A.B",
        "x--y",
        ".hidden",
        "end.",
        "a_b_c",
        "Q3",
        "a-.b",
        "-x-",
        "--",
        "a@b.c",
        "v1.2.3.",
        "+",
        "The-end",
        "and/or",
    ]
    texts = []
    for _ in range(1500):
        parts = []
        for _ in range(rng.randint(0, 40)):
            if rng.random() < 0.5:
                parts.append(rng.choice(ascii_words))
            else:
                parts.append("".join(chr(rng.randrange(128)) for _ in range(rng.randint(1, 12))))
            parts.append(rng.choice([" ", "\n", ", ", ". ", "-", "/", "", "\t", "\x1f", "\x0b"]))
        texts.append("".join(parts))
    texts += ["x" * 250 + " tail", "A" * 201, "TCK-4471." + "9" * 300]  # over-long pieces
    ref, new = FrozenTokenizer(), Tokenizer()
    for text in texts:
        assert text.isascii()
        assert new.terms(text) == ref.terms(text), repr(text)
        assert new.terms(text) == ref.terms(text), repr(text)  # again, from the cache
    assert new._ascii  # the bytes cache served them


def test_fast_terms_equal_when_the_cache_is_full(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast, "CACHE_SIZE", 5)
    ref, new = FrozenTokenizer(), Tokenizer()
    corpus = FIXED + _random_texts(12, 200) + ["plain ascii words, TCK-4471 and src/app.py"] * 2
    for text in corpus:
        assert new.terms(text) == ref.terms(text), repr(text)
    for text, got in zip(corpus, new.batch(corpus), strict=True):
        assert list(got) == ref.terms(text), repr(text)
    assert len(new._cache) == 5
    assert len(new._ascii) == 5


def test_custom_stopwords() -> None:
    stop = frozenset({"printer", "tck"})
    ref, new = FrozenTokenizer(stopwords=stop), Tokenizer(stopwords=stop)
    for text in FIXED + _random_texts(13, 200):
        assert new.terms(text) == ref.terms(text), repr(text)
        assert new.query(text) == ref.query(text), repr(text)
