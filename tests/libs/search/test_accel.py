"""The optional C accelerator (libs/goclaw_search/_accel.c, issue 11: indexing speed) gives exactly
the pure-Python path's terms, stored terms (``lex``) and indexes, byte for byte, on random text
(Unicode, CJK, codes, control characters, lone surrogates, huge texts); its build hook falls back
to pure Python without a compiler."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goclaw_search import index as index_mod
from goclaw_search import tokenize
from goclaw_search.index import Doc, SearchIndex
from goclaw_search.tokenize import Tokenizer

ROOT = Path(__file__).resolve().parents[3]
needs_accel = pytest.mark.skipif(tokenize.accel is None, reason="the C accelerator is not built here")

WORDS = ["the", "Running", "runs", "TCK-4471", "src/app.py", "user_id", "v1.2.3", "ops@example.com",
         "a--b", "end.", "...", "-x-", "C++", "#42", "x" * 230, "42", "I", "tck", "4471", "app"]  # fmt: skip
UNICODE = ["naïve", "café", "東京タワー", "Ünïcödé", "TCK-４４７１", "ﬁle", "Straße", "İstanbul", "한국어",
           "ㄱㄴ", "Σίσυφος", "naïve-café.py", "東京-tower", "½", "Ⅻ", "\u3000", "—", "…"]  # fmt: skip
# Characters whose normalisation joins them to their neighbours or changes their class: the
# C path cuts a non-ASCII text at ASCII separators, which must never change its terms.
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
                parts.append("".join(chr(rng.randint(0, 127)) for _ in range(rng.randint(1, 12))))
            elif r < 0.15 and words is not WORDS:  # any code point, surrogates and astral included
                parts.append("".join(chr(rng.randint(128, 0x2FFFF)) for _ in range(rng.randint(1, 4))))
            else:
                w = rng.choice(words)
                parts.append(w.upper() if rng.random() < 0.1 else w)
            parts.append(rng.choice(SEPARATORS))
        out.append("".join(parts))
    return out


def _tokenizers() -> tuple[Tokenizer, Tokenizer]:
    pure, fast = Tokenizer(compiled=False), Tokenizer()
    assert pure._fast is None and fast._fast is not None
    return pure, fast


@needs_accel
def test_compiled_and_pure_tokenizers_give_the_same_terms() -> None:
    texts = _texts(7, 20_000)
    assert sum(t.isascii() for t in texts) > 5_000 and sum(not t.isascii() for t in texts) > 5_000
    pure, fast = _tokenizers()
    for _ in range(2):  # cold, then every piece from the cache
        for text, got in zip(texts, fast.batch(texts), strict=True):
            want = pure.terms(text)
            assert fast.terms(text) == want, repr(text)
            assert list(got) == want and got.lex == " ".join(want), repr(text)
    cached_pieces, cached_words = fast._table.cached  # type: ignore[attr-defined]
    assert cached_pieces > 1_000 and cached_words > 100


def _index(docs: list[Doc]) -> SearchIndex:
    idx = SearchIndex()
    idx.upsert(docs[:1_500])
    idx.upsert(docs[1_200:])  # a second load: known and new terms, replaced documents
    return idx


def _saved(idx: SearchIndex, path: Path) -> dict[str, bytes]:
    idx.save(path)
    return {f.name: f.read_bytes() for f in sorted(path.iterdir())}


@needs_accel
def test_term_ids_and_strings_build_byte_identical_indexes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A bulk load from the tokenizer's term ids (C table or pure-Python table) and one from
    term strings (C or Python numbering) give the same vocabulary, postings, forward index and
    saved files, byte for byte."""
    texts = _texts(11, 2_000)
    pure, fast = _tokenizers()
    fast.batch(_texts(5, 300))  # the table already numbers other terms: global ids != the index's
    forms = {
        "C ids": fast.batch(texts),
        "Python ids": pure.batch(texts),
        "strings": [pure.terms(t) for t in texts],
    }
    assert all(type(t) is tokenize.TermIds for t in forms["C ids"] + forms["Python ids"])
    saved = {}
    for name, terms in forms.items():
        saved[name] = _saved(_index([Doc(i, "", t) for i, t in enumerate(terms)]), tmp_path / name)
    with monkeypatch.context() as m:
        m.setattr(tokenize, "accel", None)  # the pure-Python numbering of both forms
        saved["ids, no C"] = _saved(
            _index([Doc(i, "", t) for i, t in enumerate(forms["Python ids"])]), tmp_path / "a"
        )
        saved["strings, no C"] = _saved(
            _index([Doc(i, "", t) for i, t in enumerate(forms["strings"])]), tmp_path / "b"
        )
    first = saved.pop("strings")
    assert first["vocab.txt"] and len(first) > 10
    for name, files in saved.items():
        assert files == first, name
    assert index_mod.tokenize is tokenize


@needs_accel
def test_term_ids_of_batches_and_tables_mix(tmp_path: Path) -> None:
    """Documents from several batches, from another table, and plain strings in one load."""
    texts = _texts(12, 600)
    pure, fast = _tokenizers()
    other = Tokenizer()
    mixed: list[Any] = fast.batch(texts[:200]) + other.batch(texts[200:400]) + fast.batch(texts[400:])
    mixed[300] = pure.terms(texts[300])
    a, b = SearchIndex(), SearchIndex()
    a.upsert([Doc(i, "", t) for i, t in enumerate(mixed)])
    b.upsert([Doc(i, "", pure.terms(t)) for i, t in enumerate(texts)])
    assert _saved(a, tmp_path / "a") == _saved(b, tmp_path / "b")
    c, d = SearchIndex(), SearchIndex()  # one table, batch after batch: the id map grows
    for lo in range(0, 600, 150):
        c.upsert([Doc(i, "", t) for i, t in enumerate(fast.batch(texts[lo : lo + 150]), lo)])
        d.upsert([Doc(i, "", pure.terms(t)) for i, t in enumerate(texts[lo : lo + 150], lo)])
    assert _saved(c, tmp_path / "c") == _saved(d, tmp_path / "d")


@needs_accel
def test_weird_and_huge_texts() -> None:
    pure, fast = _tokenizers()
    texts = [
        "",
        "\x00" * 1000,
        "a\x00b TCK-4471\x00x",
        "\ud800\udc00\udfff",
        "x" * 5_000_000,  # one 5 MB piece: a blob (its parts only, never cached)
        "TCK-4471 " * 300_000,
        ("naïve 東京 e\u0301 <\u0338 " * 50_000),
        "a-" * 200_000,
    ]
    for text, got in zip(texts, fast.batch(texts), strict=True):
        want = pure.terms(text)
        assert list(got) == want and got.lex == " ".join(want)
        assert fast.terms(text) == want


@needs_accel
def test_the_compiled_functions_refuse_bad_arguments() -> None:
    accel: Any = tokenize.accel
    with pytest.raises(ValueError, match="more terms"):
        accel.term_ids({}, [["a", "b"]], 1)
    with pytest.raises(ValueError, match="fewer terms"):
        accel.term_ids({}, [["a"]], 2)
    vocab: dict[str, int] = {"b": 0}
    ids = np.frombuffer(accel.term_ids(vocab, [["a", "b"], ("a", "c")], 4), dtype=np.int64)
    assert ids.tolist() == [1, 0, 1, 2] and vocab == {"b": 0, "a": 1, "c": 2}

    def word(w: str) -> Any:
        return {"bad": 1, "boom": 1 / 0 if w == "boom" else None}.get(w, w)

    table = accel.TermTable(word, lambda p: ("x",), lambda t: ["u"], 100)
    with pytest.raises(TypeError):
        table.batch(("a b",))  # not a list
    with pytest.raises(TypeError):
        table.batch(["a", b"b"])
    with pytest.raises(TypeError, match="must be a str"):
        table.batch(["bad"])  # the word rule gave no str
    with pytest.raises(ZeroDivisionError):
        table.terms_of("boom")
    _gids, counts, lex = table.batch(["ok a--b, é", ""])  # a word, a piece, a non-ASCII segment
    assert np.frombuffer(counts, dtype=np.int64).tolist() == [3, 0] and lex == ["ok x u", ""]
    table.terms.clear()  # its list changed behind its back: an error, never a crash
    with pytest.raises(RuntimeError):
        table.batch(["newword"])
    with pytest.raises(RuntimeError):
        table.terms_of("ok")
    with pytest.raises(TypeError):
        accel.TermTable(1, 2, 3, 4)
    with pytest.raises(RuntimeError):
        accel.TermTable.__new__(accel.TermTable).batch(["a"])  # never initialised
    known = np.full(4, -1, dtype=np.int64)
    known[1] = 0
    vocab2 = {"b": 0, "c": 7}
    ids = accel.number_new(np.array([2, 0, 2, 3, 1], dtype=np.int32), known, vocab2, ["a", "b", "c", "d"])
    assert np.frombuffer(ids, dtype=np.int32).tolist() == [7, 2, 7, 3, 0]
    assert known.tolist() == [2, 0, 7, 3]  # a new term: the next id, len(vocab)
    assert vocab2 == {"b": 0, "c": 7, "a": 2, "d": 3}
    with pytest.raises(IndexError):
        accel.number_new(np.array([9], dtype=np.int32), known, {}, ["a"])
    with pytest.raises(ValueError):
        accel.number_new(np.zeros(3, dtype=np.int8), known, {}, ["a"])
    with pytest.raises(ValueError):
        accel.number_new(np.zeros(3, dtype=np.int32), known.astype(np.int32), {}, ["a"])
    with pytest.raises(TypeError):
        accel.number_new(np.zeros(1, dtype=np.int32), known, [], ["a"])
    with pytest.raises(ValueError, match="contiguous"):
        accel.number_new(np.zeros(1, dtype=np.int32), known[::2], {}, ["a"])
    with pytest.raises(BufferError):  # read-only
        accel.number_new(np.zeros(1, dtype=np.int32), bytes(32), {}, ["a"])
    tids, lens = np.array([3, 1, 3, 0, 1], dtype=np.int32), np.array([3, 0, 2], dtype=np.int64)
    terms, slots, tf = (np.frombuffer(b, dtype=d) for b, d in zip(
        accel.postings(tids, lens, 10, 4), (np.int64, np.int32, np.float32), strict=True))  # fmt: skip
    assert (terms.tolist(), slots.tolist(), tf.tolist()) == ([0, 1, 1, 3], [12, 10, 12, 10], [1, 1, 1, 2])
    with pytest.raises(ValueError, match="add up"):
        accel.postings(tids, np.array([3, 3], dtype=np.int64), 0, 4)
    with pytest.raises(IndexError):
        accel.postings(tids, lens, 0, 3)  # term 3 outside 3 terms
    with pytest.raises(ValueError):
        accel.postings(tids, lens, -1, 4)
    with pytest.raises(ValueError, match="int32 tids"):
        accel.postings(tids.astype(np.int64), lens, 0, 4)


def _hook() -> Any:
    spec = importlib.util.spec_from_file_location("goclaw_hatch_build", ROOT / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_build_hook_falls_back_without_a_compiler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hook = _hook()
    source = tmp_path / "_accel.c"
    source.write_text((ROOT / hook.SOURCE).read_text())
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    assert hook._compile(source, tmp_path / "_accel.so") is False
    assert "C accelerator not built" in capsys.readouterr().err
    assert not list(tmp_path.glob("_accel.so*"))
    monkeypatch.setenv("CC", "false")  # a compiler that fails
    assert hook._compile(source, tmp_path / "_accel.so") is False
    assert not list(tmp_path.glob("_accel.so*"))


def test_an_accelerator_of_another_abi_is_ignored() -> None:
    """An editable install keeps the module its last build made: one built from an older
    checkout (another ABI, or none) must not be called with this checkout's arguments."""
    import types

    module = types.ModuleType("goclaw_search._accel")
    assert not tokenize._usable(module)  # no ABI: built before the ABI existed
    module.ABI = tokenize.ACCEL_ABI + 1  # type: ignore[attr-defined]
    assert not tokenize._usable(module)
    module.ABI = tokenize.ACCEL_ABI  # type: ignore[attr-defined]
    assert tokenize._usable(module)


@needs_accel
def test_the_built_accelerator_has_this_checkouts_abi() -> None:
    assert tokenize.accel is not None and tokenize.accel.ABI == tokenize.ACCEL_ABI


@needs_accel
def test_memory_indexing_with_and_without_the_accelerator(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``goclaw memory index`` end to end: the rows written (``lex`` included) and the saved
    search index are the same, byte for byte, whether the C accelerator is used or not."""
    from goclaw.engine import Engine

    # Files hold no surrogates, and a NUL makes a file binary (skipped).
    texts = [t.encode("utf-8", "replace").decode("utf-8").replace("\x00", " ") for t in _texts(13, 240)]
    notes = ["\n\n".join(texts[i : i + 8]) for i in range(0, len(texts), 8)]
    out = {}
    for compiled in (True, False):
        with monkeypatch.context() as m:
            if not compiled:
                m.setattr(tokenize, "accel", None)
            tokenize.default_tokenizer.cache_clear()  # made again, with or without the accelerator
            eng = Engine.open(tmp_path / f"ws{compiled}")
            try:
                assert (tokenize.default_tokenizer()._fast is not None) is compiled
                eng.agents.create("ada")
                root = Path(eng.agent_dir(eng.agents.get("ada")))
                for i, note in enumerate(notes):
                    (root / "memory").mkdir(parents=True, exist_ok=True)
                    (root / "memory" / f"n{i:02}.md").write_text(note, encoding="utf-8")
                report = eng.memory.index("ada")
                assert not report.skipped_files, report.skipped_files
                with eng.db.engine.connect() as c:
                    rows = c.exec_driver_sql(
                        "SELECT id, path, text, lex FROM memory_chunks ORDER BY id"
                    ).all()
                saved = eng.memory.backend.save(eng.agents.get("ada").id)
                assert saved is not None
                files = {f.name: f.read_bytes() for f in sorted(saved.iterdir()) if f.name != "meta.json"}
                out[compiled] = ([tuple(r) for r in rows], files)
            finally:
                eng.close()
                tokenize.default_tokenizer.cache_clear()
    assert len(out[True][0]) > 100
    assert out[True] == out[False]


def test_the_build_hook_links_for_the_platform(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """macOS's linker refuses a module whose Python symbols are undefined unless told to look
    them up at load time; elsewhere a plain shared object."""
    hook = _hook()
    assert hook._link_flags("darwin") == ["-bundle", "-undefined", "dynamic_lookup"]
    assert hook._link_flags("linux") == ["-shared"]
    args = tmp_path / "args"
    cc = tmp_path / "cc"
    cc.write_text(f'#!/bin/sh\necho "$@" > {args}\nfor a; do last=$a; done\ntouch "$last"\n')
    cc.chmod(0o755)
    monkeypatch.setenv("CC", str(cc))
    monkeypatch.setattr(hook.sys, "platform", "darwin")
    assert hook._compile(tmp_path / "_accel.c", tmp_path / "_accel.so") is True
    assert "-bundle -undefined dynamic_lookup" in args.read_text()
    assert (tmp_path / "_accel.so").exists()


@needs_accel
def test_a_number_among_the_stopwords_is_dropped() -> None:
    """The C path takes a number as its own term without asking the word rule, unless a
    stopword is a number."""
    stop = frozenset({"the", "42"})
    pure, fast = Tokenizer(compiled=False, stopwords=stop), Tokenizer(stopwords=stop)
    texts = ["the 42 answers 42x TCK-42 420", "42", "x-42-y 0042"]
    for text, got in zip(texts, fast.batch(texts), strict=True):
        assert fast.terms(text) == pure.terms(text) == list(got)
    assert "42" not in fast.terms("the 42 answers") and "42" in Tokenizer().terms("the 42 answers")


CHUNK_PIECES = ["word", "TCK-4471", "  ", "\t", "\r", "\n", "\n\n", "\r\n", " \n", "\u3000", "\xa0",
                "\u2028", "\x0b", "\x0c", "\x1c", "\x85", "é", "東京", "\U0001f600", "\ud800",
                "x" * 50, "y " * 40, "z" * 300]  # fmt: skip


@needs_accel
def test_compiled_and_pure_chunkers_give_the_same_chunks() -> None:
    """The C chunker (goclaw_memory.chunking.chunk_text's rules in one pass) on random text:
    CR, whitespace-only lines, Unicode spaces and line separators, long lines, astral and
    surrogate characters, any maximum."""
    from goclaw_memory.chunking import chunk_text

    rng = random.Random(17)
    for _ in range(4_000):
        text = "".join(rng.choice(CHUNK_PIECES) for _ in range(rng.randint(0, 200)))
        max_len = rng.choice([0, -1, 1, 2, 3, 10, 40, 100, 1000])
        assert chunk_text(text, max_len) == chunk_text(text, max_len, compiled=False), (text, max_len)
    accel: Any = tokenize.accel
    with pytest.raises(ValueError):
        accel.chunks("a", 0, list)
    with pytest.raises(TypeError):
        accel.chunks(b"a", 10, list)
    with pytest.raises(TypeError, match="sequence"):
        accel.chunks("x" * 20, 10, lambda line: 1)
    with pytest.raises(ZeroDivisionError):
        accel.chunks("x" * 20, 10, lambda line: 1 / 0)
