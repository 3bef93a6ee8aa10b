"""The term table (goclaw_search.term_table, behind Tokenizer.batch) gives exactly the terms
and stored forms (``lex``) of Tokenizer.terms, on random text (Unicode, CJK, codes, control
characters, lone surrogates, huge texts), batch after batch, and a search index built from its
term ids is the index built from the term strings, byte for byte."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goclaw_search import tokenize
from goclaw_search.index import Doc, SearchIndex
from goclaw_search.tokenize import Tokenizer

WORDS = ["the", "Running", "runs", "TCK-4471", "src/app.py", "user_id", "v1.2.3", "ops@example.com",
         "a--b", "end.", "...", "-x-", "C++", "#42", "x" * 230, "42", "I", "tck", "4471", "app",
         "ORD-6399361", "/srv/exports/8274.csv", "abcdefghijklmnop", "abcdefghijklmnopq"]  # fmt: skip
UNICODE = ["naïve", "café", "東京タワー", "Ünïcödé", "TCK-４４７１", "ﬁle", "Straße", "İstanbul", "한국어",
           "ㄱㄴ", "Σίσυφος", "naïve-café.py", "東京-tower", "½", "Ⅻ", "\u3000", "—", "…"]  # fmt: skip
ODD = ["<\u0338", "=\u0338x", "e\u0301", " \u0301", "\u0301abc", "\x00", "\ud800", "a\udfffb", "x\u200by",
       "\u0b47\u0b3e", "\u1100\u1161", "Ａｂｃ－１２"]  # fmt: skip
SEPARATORS = [" ", "  ", "\n", "\t", "\r\n", "\x0b", "\x0c", ", ", "; ", "(", ")", "'", '"', "!?", "-", "/"]


def _texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        parts = []
        words = WORDS + UNICODE + ODD if rng.random() < 0.4 else WORDS
        for _ in range(rng.randint(0, 60)):
            r = rng.random()
            if r < 0.12:  # random ASCII noise: any byte 0-127
                parts.append("".join(chr(rng.randint(0, 127)) for _ in range(rng.randint(1, 20))))
            elif r < 0.15 and words is not WORDS:  # any code point, surrogates and astral included
                parts.append("".join(chr(rng.randint(128, 0x2FFFF)) for _ in range(rng.randint(1, 4))))
            elif r < 0.2:  # a new code: a piece of its own (a new key)
                parts.append(f"k{rng.randint(0, 10 ** rng.randint(1, 15))}-{rng.randint(0, 99)}")
            else:
                w = rng.choice(words)
                parts.append(w.upper() if rng.random() < 0.1 else w)
            parts.append(rng.choice(SEPARATORS))
        out.append("".join(parts))
    return out


def _same(tok: Tokenizer, ref: Tokenizer, texts: list[str]) -> None:
    for text, got in zip(texts, tok.batch(texts), strict=True):
        want = ref.terms(text)
        assert list(got) == want and got.lex == " ".join(want), repr(text)


def test_batches_give_the_terms_of_each_text() -> None:
    texts = _texts(7, 12_000)
    assert sum(t.isascii() for t in texts) > 3_000 and sum(not t.isascii() for t in texts) > 3_000
    tok, ref = Tokenizer(), Tokenizer()
    for _ in range(2):  # new pieces, then every piece known
        for lo in range(0, len(texts), 1_500):
            _same(tok, ref, texts[lo : lo + 1_500])
    assert tok._table is not None and tok._table.pieces > 1_000
    ascii_only = [t for t in texts if t.isascii()]
    _same(tok, ref, ascii_only[:500])  # a batch of one kind, then the other
    _same(tok, ref, [t for t in texts if not t.isascii()][:500])


def test_the_hash_table_grows_and_the_pieces_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokenize, "CACHE_SIZE", 300)
    tok, ref = Tokenizer(), Tokenizer()
    for seed in range(6):  # each batch brings new codes: the numbering starts again past 300
        _same(tok, ref, _texts(seed, 400))
    assert tok._table is not None and tok._table.pieces < 300 + 40_000


def test_weird_and_huge_texts() -> None:
    tok, ref = Tokenizer(), Tokenizer()
    texts = [
        "",
        " ",
        "\x00" * 1000,
        "a\x00b TCK-4471\x00x",
        "\ud800\udc00\udfff",
        "x" * 2_000_000,  # one 2 MB piece: a blob (its parts only, never kept)
        "TCK-4471 " * 100_000,
        ("naïve 東京 e\u0301 <\u0338 " * 20_000),
        "a-" * 100_000,
        "abcdefgh abcdefghi abcdefghijklmnop abcdefghijklmnopq 12345678 1234567890123456",
        "",
    ]
    _same(tok, ref, texts)
    _same(tok, ref, texts)
    _same(tok, ref, [])


def test_a_number_among_the_stopwords_is_dropped() -> None:
    stop = frozenset({"the", "42"})
    tok = Tokenizer(stopwords=stop)
    texts = ["the 42 answers 42x TCK-42 420", "42", "x-42-y 0042"]
    _same(tok, Tokenizer(stopwords=stop), texts)
    assert "42" not in tok.terms("the 42 answers") and "42" in Tokenizer().terms("the 42 answers")


def _index(docs: list[Doc]) -> SearchIndex:
    idx = SearchIndex()
    idx.upsert(docs[:1_500])
    idx.upsert(docs[1_200:])  # a second load: known and new terms, replaced documents
    return idx


def _saved(idx: SearchIndex, path: Path) -> dict[str, bytes]:
    idx.save(path)
    return {f.name: f.read_bytes() for f in sorted(path.iterdir())}


def test_term_ids_and_strings_build_byte_identical_indexes(tmp_path: Path) -> None:
    """A bulk load from the tokenizer's term ids and one from term strings give the same
    vocabulary, postings, forward index and saved files, byte for byte."""
    texts = _texts(11, 2_000)
    tok, ref = Tokenizer(), Tokenizer()
    tok.batch(_texts(5, 300))  # the table already numbers other terms: global ids != the index's
    ids = tok.batch(texts)
    assert all(type(t) is tokenize.TermIds for t in ids)
    by_ids = _saved(_index([Doc(i, "", t) for i, t in enumerate(ids)]), tmp_path / "ids")
    by_strings = _saved(_index([Doc(i, "", ref.terms(t)) for i, t in enumerate(texts)]), tmp_path / "s")
    assert by_strings["vocab.txt"] and len(by_strings) > 10
    assert by_ids == by_strings


def test_a_fresh_tables_first_load_matches_strings(tmp_path: Path) -> None:
    """A fresh index's first load from term ids (every term new: the shortcut a bulk load
    takes), in the table's order and in another, equals a load from term strings."""
    texts = _texts(13, 800)
    ids = Tokenizer().batch(texts)
    ref = Tokenizer()
    in_order = SearchIndex()
    in_order.upsert([Doc(i, "", t) for i, t in enumerate(ids)])
    reordered, by_strings = SearchIndex(), SearchIndex()
    reordered.upsert([Doc(i, "", t) for i, t in reversed(list(enumerate(ids)))])
    by_strings.upsert([Doc(i, "", ref.terms(t)) for i, t in enumerate(texts)])
    assert list(in_order.vocab) == list(by_strings.vocab)
    assert _saved(in_order, tmp_path / "a") == _saved(by_strings, tmp_path / "b")
    reversed_strings = SearchIndex()
    reversed_strings.upsert([Doc(i, "", ref.terms(texts[i])) for i in reversed(range(len(texts)))])
    assert _saved(reordered, tmp_path / "c") == _saved(reversed_strings, tmp_path / "d")


def test_term_ids_of_batches_and_tables_mix(tmp_path: Path) -> None:
    """Documents from several batches, from another table, and plain strings in one load."""
    texts = _texts(12, 600)
    tok, other, ref = Tokenizer(), Tokenizer(), Tokenizer()
    mixed: list[Any] = tok.batch(texts[:200]) + other.batch(texts[200:400]) + tok.batch(texts[400:])
    mixed[300] = ref.terms(texts[300])
    a, b = SearchIndex(), SearchIndex()
    a.upsert([Doc(i, "", t) for i, t in enumerate(mixed)])
    b.upsert([Doc(i, "", ref.terms(t)) for i, t in enumerate(texts)])
    assert _saved(a, tmp_path / "a") == _saved(b, tmp_path / "b")
    c, d = SearchIndex(), SearchIndex()  # one table, batch after batch: the id map grows
    for lo in range(0, 600, 150):
        c.upsert([Doc(i, "", t) for i, t in enumerate(tok.batch(texts[lo : lo + 150]), lo)])
        d.upsert([Doc(i, "", ref.terms(t)) for i, t in enumerate(texts[lo : lo + 150], lo)])
    assert _saved(c, tmp_path / "c") == _saved(d, tmp_path / "d")


@pytest.mark.parametrize(("scipy_from", "kernels"), [(0, True), (0, False), (10**9, True)])
def test_postings_count_each_term_per_document(
    monkeypatch: pytest.MonkeyPatch, scipy_from: int, kernels: bool
) -> None:
    """The postings of a segment (a large one: the compiled counting sort, else scipy's COO to
    CSR; a small one: the numpy sort): term-major, slots ascending, each (term, slot) once
    with its count."""
    from goclaw_search import index_build, vecq
    from goclaw_search.index_build import _postings

    monkeypatch.setattr(index_build, "SCIPY_FROM", scipy_from)
    if not kernels:
        monkeypatch.setattr(vecq, "compiled", None)
    rng = np.random.default_rng(3)
    lens = rng.integers(0, 40, 300)
    tids = rng.integers(0, 50, int(lens.sum()))
    terms, slots, tf = _postings(tids, lens, 7, 60)
    want: dict[tuple[int, int], int] = {}
    owner = np.repeat(np.arange(7, 7 + len(lens)), lens)
    for t, s in zip(tids.tolist(), owner.tolist(), strict=True):
        want[t, s] = want.get((t, s), 0) + 1
    assert sorted(want) == list(zip(terms.tolist(), slots.tolist(), strict=True))
    assert tf.tolist() == [float(want[k]) for k in sorted(want)]
    assert (terms.dtype, slots.dtype, tf.dtype) == (np.int64, np.int32, np.float32)


@pytest.mark.parametrize("limit", [tokenize.CACHE_SIZE, 300])
def test_the_compiled_pieces_give_the_numpy_term_ids(monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    """The compiled split and lookup (goclaw_search._vec) and the numpy ones number the same
    pieces and terms: the same term ids and stored forms, batch after batch (new pieces, known
    ones, a hash table that grows, the piece numbering started again past ``limit``)."""
    from goclaw_search import term_table

    kernels = term_table.compiled
    if kernels is None:
        pytest.skip("goclaw_search._vec is not built (or GOCLAW_SEARCH_NUMPY=1)")
    monkeypatch.setattr(tokenize, "CACHE_SIZE", limit)
    rng = random.Random(5)
    texts = [*_texts(9, 6_000), "", " ", "a", "x" * 17, "abcdefghijklmnop " * 3, "end.\x00mid"]
    batches = [*(texts[a : a + rng.randint(1, 900)] for a in range(0, len(texts), 450)), texts[:2000]]
    fast, plain = Tokenizer(), Tokenizer()
    for batch in batches:
        monkeypatch.setattr(term_table, "compiled", kernels)
        got = fast.batch(batch)
        monkeypatch.setattr(term_table, "compiled", None)
        want = plain.batch(batch)
        for text, g, w in zip(batch, got, want, strict=True):
            assert g.ids.tolist() == w.ids.tolist() and g.lex == w.lex, repr(text)
    assert fast._table is not None and plain._table is not None
    assert fast._table.terms == plain._table.terms


@pytest.mark.parametrize("cache_size", [300, tokenize.CACHE_SIZE])
def test_new_pieces_in_bulk_follow_the_rules_of_one_piece(
    monkeypatch: pytest.MonkeyPatch, cache_size: int
) -> None:
    monkeypatch.setattr(tokenize, "CACHE_SIZE", cache_size)
    pieces = ["the", "running", "tck-4471", "tck-the-4471.", "a--b", "-", "", "x" * 230, "x-" * 120, "end.",
              "42", "i", "ops@example.com", "src/app.py", "user_id", "#", "c++", "a-in", "runs"]  # fmt: skip
    pieces += [f"w{i}-running{i % 7}" for i in range(400)] + [f"word{i}s" for i in range(400)]
    flat, counts = Tokenizer().ascii_batch(pieces)
    one = Tokenizer()
    want = [one.ascii_rules(p) for p in pieces]
    assert counts == [len(t) for t in want]
    assert flat == [t for terms in want for t in terms]
    from goclaw_search import term_table

    if term_table.compiled is None:
        return
    pieces = [p for p in pieces if p]  # a split never makes an empty piece
    joined = " ".join(pieces).encode("ascii")
    size = np.array([len(p) for p in pieces], dtype=np.int64)
    starts = np.cumsum(size + 1) - size - 1
    tok = Tokenizer()
    words, word = tok.word_rules()
    ids: dict[str, int] = {}
    terms: list[str] = []
    counts_c, gids, lex_len, stored = term_table.compiled.number_pieces(
        joined, starts, size, words, word, tok.ascii_rules, ids, terms, tokenize.MAX_TERM_CHARS
    )
    want = [one.ascii_rules(p) for p in pieces]
    assert counts_c.tolist() == [len(t) for t in want]
    assert [terms[g] for g in gids.tolist()] == [t for ts in want for t in ts]
    assert lex_len.tolist() == [len(" ".join(t)) + 1 if t else 0 for t in want]
    assert stored == "".join(" ".join(t) + " " for t in want if t).encode("ascii")


def test_the_compiled_first_seen_ids_are_numpys() -> None:
    """``_vec.first_seen`` gives the global ids ``SearchIndex._local_ids`` numbers: those not
    yet mapped, once each, in order of first occurrence."""
    from goclaw_search import vecq

    if vecq.compiled is None or not hasattr(vecq.compiled, "first_seen"):
        pytest.skip("goclaw_search._vec is not built (or GOCLAW_SEARCH_NUMPY=1)")
    rng = np.random.default_rng(3)
    gmap = np.where(rng.random(5_000) < 0.3, rng.integers(0, 9, 5_000), -1).astype(np.int64)
    gids = rng.integers(0, 5_000, 60_000).astype(np.int32)
    want = list(dict.fromkeys(g for g in gids.tolist() if gmap[g] < 0))
    assert vecq.compiled.first_seen(gids, gmap).tolist() == want
    assert vecq.compiled.first_seen(gids[:0], gmap).tolist() == []


def test_threads_batching_with_one_tokenizer_get_their_own_terms() -> None:
    """Engines in several threads index with the process's one tokenizer: its term table grows
    while another batch reads it, and every text still gets its own terms (without one batch
    at a time a batch failed with 'cannot resize an array that is exporting buffers')."""
    import sys
    import threading

    tok = Tokenizer()
    failed: list[BaseException] = []
    wrong: list[str] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(60):
                texts = [
                    " ".join(f"w{seed}x{rng.randrange(5000)} shared{rng.randrange(50)}" for _ in range(8))
                    for _ in range(20)
                ]
                for text, ids in zip(texts, tok.batch(texts), strict=True):
                    if list(ids) != tok.terms(text):
                        wrong.append(text)
        except BaseException as exc:  # reported below
            failed.append(exc)

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # threads take turns often: the window is small
    try:
        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(switch)
    assert not failed, failed
    assert not wrong, wrong[:3]
