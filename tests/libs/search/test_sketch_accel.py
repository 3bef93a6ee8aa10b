"""The C passage sketcher (libs/goclaw_search/_sketch.c, used by goclaw_embeddings.static_passages):
the same sketches, byte for byte, as the pure-Python path on thousands of Markdown-ish texts, the
Python path when the module is absent or busy, and no crash on odd input (issue 11: indexing
speed)."""

from __future__ import annotations

import random
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goclaw_embeddings import static_passages
from goclaw_embeddings.static_model import StaticEmbedder
from goclaw_search.passages import best_passage_cosine

sketch_c = pytest.importorskip("goclaw_search._sketch")
ROOT = Path(__file__).resolve().parents[3]

_WS = [" ", "\t", "\u00a0", "\u2003", "\u3000", "\x1f", "\u200b", "\u180e", ""]
_BREAKS = ["\n", "\n", "\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
_STARTS = [
    "#", "##", "######", "#######", "-", "*", "+", "1.", "12)", "123456789.", "1234567890.", "\u0661\u0662.",
    "\uff11.", "```", "~~~", "``", "~~~~", "```py", "#x", "-x", "1.x", "",
]  # fmt: skip
_WORDS = [
    "Kestrel", "gateway", "rolled", "back", "TCK-4471", "approved", "by", "Mei", "invoice", "INV-20931",
    "café", "naïve", "résumé", "東京", "日本語のテキスト", "ünïcödé", "😀", "$349", "10:05", "a", "the",
    "#tag", "x" * 120, "\x00", "\x01", "\ufffd", "Ωmega", "ǅ", "ﬁ", "İstanbul", "straße", "\u0301e",
]  # fmt: skip


def _line(rnd: random.Random) -> str:
    lead = "".join(rnd.choice(_WS) for _ in range(rnd.choice([0, 0, 0, 1, 2, 3, 4])))
    start = rnd.choice(_STARTS)
    gap = rnd.choice(_WS)
    words = rnd.choice(_WS[:3]).join(rnd.choice(_WORDS) for _ in range(rnd.randint(0, 12)))
    return lead + start + gap + words + rnd.choice(["", "", " ", "\t"])


def _text(rnd: random.Random) -> str:
    out = []
    for _ in range(rnd.randint(0, 18)):
        out.append(_line(rnd) if rnd.random() < 0.85 else "")
        out.append(rnd.choice(_BREAKS))
    return "".join(out)[: rnd.choice([10_000, 10_000, 40, 200])]


def _same(a: list[Any], b: list[Any]) -> None:
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        for field, u, v in zip(x._fields, x, y, strict=True):
            assert u.dtype == v.dtype, (i, field)
            assert u.tobytes() == v.tobytes(), (i, field)


@pytest.fixture(scope="module")
def emb() -> StaticEmbedder:
    e = StaticEmbedder()
    e.load()
    return e


def test_the_c_sketches_are_the_python_sketches_byte_for_byte(emb: StaticEmbedder) -> None:
    """4,000 random Markdown-ish texts (headings, items, fences, blank lines, every line break of
    str.splitlines, Unicode whitespace and digits, CJK, NUL, long pieces), in batches of
    different mixes: the same arrays, of the same types, as the Python path."""
    assert static_passages.compiled is not None
    rnd = random.Random(11)
    texts = [_text(rnd) for _ in range(4000)]
    fresh = StaticEmbedder()  # its own (cold) C piece cache
    got = static_passages.sketches(fresh, texts)
    _same(got, static_passages.sketches(emb, texts, use_compiled=False))
    assert sum(len(s.norms) for s in got) > 5_000
    for size in (1, 3, 300):  # other batch compositions (the types follow the batch), warm cache
        part = texts[size : size * 2]
        _same(static_passages.sketches(fresh, part), static_passages.sketches(emb, part, use_compiled=False))


def test_large_texts_and_odd_characters(emb: StaticEmbedder) -> None:
    rnd = random.Random(3)
    huge = "\n".join(_line(rnd) for _ in range(20_000))  # ~1 MB, one text
    odd = ["\x00" * 50, "\r\n" * 30, "#" * 5000, "- " * 3000, "1. " * 3000, "```" * 100, "x" * 20_000]
    texts = [huge, *odd, ""]
    _same(
        static_passages.sketches(StaticEmbedder(), texts),
        static_passages.sketches(emb, texts, use_compiled=False),
    )


def test_the_scores_match_embedding_each_passage_on_both_paths(emb: StaticEmbedder) -> None:
    """Within 1e-5 of embedding each passage (without U+001F, a separator to str.split but a
    control character the tokenizer drops, joining the words around it)."""
    rnd = random.Random(8)
    texts = [_text(rnd).replace("\x1f", " ") for _ in range(60)]
    for query in ("Kestrel gateway rollback", "café in Tokyo", "invoice approved by Mei"):
        want = best_passage_cosine(emb.embed, query, texts)
        for use in (True, False):
            from goclaw_search.passage_sketches import SketchBatch, sketch_cosines

            batch = SketchBatch.of(static_passages.sketches(emb, texts, use_compiled=use))
            got = sketch_cosines(batch, emb.token_similarity(query, batch.tokens))
            np.testing.assert_allclose(got, want, atol=1e-5)


def test_a_lone_surrogate_fails_the_call_and_leaves_the_cache_sound(emb: StaticEmbedder) -> None:
    """The tokenizer refuses a lone surrogate on either path; the C sketcher forgets the pieces
    it had not tokenised yet, so the next call is right."""
    fresh = StaticEmbedder()
    with pytest.raises(Exception):  # noqa: B017 - whatever the tokenizer raises
        static_passages.sketches(fresh, ["- fine words\n- bad \ud800 piece"])
    with pytest.raises(Exception):  # noqa: B017
        static_passages.sketches(emb, ["- fine words\n- bad \ud800 piece"], use_compiled=False)
    texts = ["- fine words\n- good piece", "# bad\nfine"]
    _same(static_passages.sketches(fresh, texts), static_passages.sketches(emb, texts, use_compiled=False))


def test_without_the_module_the_python_path_runs(
    emb: StaticEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = ["# Day\n- Kestrel rolled back\n- TCK-4471 approved", "plain café"]
    want = static_passages.sketches(emb, texts, use_compiled=False)
    monkeypatch.setattr(static_passages, "compiled", None)
    fresh = StaticEmbedder()
    _same(static_passages.sketches(fresh, texts), want)
    assert getattr(fresh, "_c_sketcher", None) is None


def test_a_module_of_another_abi_is_ignored() -> None:
    module = types.ModuleType("goclaw_search._sketch")
    assert not static_passages._usable(module)
    module.ABI = static_passages.SKETCH_ABI + 1  # type: ignore[attr-defined]
    assert not static_passages._usable(module)
    module.ABI = static_passages.SKETCH_ABI  # type: ignore[attr-defined]
    assert static_passages._usable(module)
    assert static_passages._usable(sketch_c)


def _fake(rows: int = 8, dim: int = 4) -> np.ndarray:
    return np.arange(rows * dim, dtype=np.float32).reshape(rows, dim) + 1


def test_a_call_while_tokenising_returns_none() -> None:
    """A second call while the first is in its tokenize callback (another thread) is told to use
    the Python path (None) and leaves the cache alone."""
    seen: list[Any] = []

    def tokenize(pieces: list[str]) -> list[list[int]]:
        seen.append(sk.batch(["other text"]))
        return [[1]] * len(pieces)

    sk = sketch_c.Sketcher(_fake(), tokenize)
    out = sk.batch(["a b", "b c"])
    assert seen == [None]
    assert np.frombuffer(out[0], np.uint32).tolist() == [1, 1, 1, 1]
    assert sk.size() == (3, 3, 3)


def test_bad_arguments_and_callbacks_raise() -> None:
    with pytest.raises(ValueError, match="float32"):
        sketch_c.Sketcher(np.zeros((4, 2), np.float64), lambda p: [[0]] * len(p))
    with pytest.raises(TypeError):
        sketch_c.Sketcher(_fake(), None)
    sk = sketch_c.Sketcher(_fake(), lambda p: [[0]] * (len(p) + 1))
    with pytest.raises(ValueError, match="number of pieces"):
        sk.batch(["a b"])
    assert sk.size() == (0, 0, 0)
    sk = sketch_c.Sketcher(_fake(rows=8), lambda p: [[9]] * len(p))
    with pytest.raises(IndexError):
        sk.batch(["a"])
    sk = sketch_c.Sketcher(_fake(), lambda p: [["x"]] * len(p))
    with pytest.raises(TypeError):
        sk.batch(["a"])
    with pytest.raises(TypeError, match="str"):
        sk.batch([b"bytes"])
    assert sk.size() == (0, 0, 0)


def test_the_piece_cache_is_bounded() -> None:
    """Past 200,000 pieces, or 4 million characters of them, the cache is emptied before the
    next batch."""
    sk = sketch_c.Sketcher(_fake(), lambda p: [[1]] * len(p))
    text = " ".join(f"w{i}" for i in range(210_000))
    sk.batch([text])
    assert sk.size()[0] == 210_000
    sk.batch(["w1 w2"])
    assert sk.size() == (2, 2, 4)
    sk.batch(["\n".join(f"{i:08d}" * 50_000 for i in range(9))])  # 9 pieces of 400,000 characters
    assert sk.size() == (11, 11, 3_600_004)
    sk.batch(["z" * 500_000])
    assert sk.size()[2] == 4_100_004
    sk.batch(["w1"])
    assert sk.size() == (1, 1, 2)


def test_the_build_hook_builds_the_sketcher(tmp_path: Path) -> None:
    """hatch_build.py builds _sketch.c as its own module, of this checkout's ABI."""
    import importlib.machinery
    import importlib.util
    import shutil
    import sysconfig

    spec = importlib.util.spec_from_file_location("goclaw_hatch_build", ROOT / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    assert "libs/goclaw_search/_sketch.c" in hook.SOURCES
    if not shutil.which(str(sysconfig.get_config_var("CC") or "cc").split()[0]):
        pytest.skip("no C compiler")
    target = tmp_path / ("_sketch" + str(sysconfig.get_config_var("EXT_SUFFIX")))
    assert hook._compile(ROOT / "libs/goclaw_search/_sketch.c", target)
    loader = importlib.machinery.ExtensionFileLoader("goclaw_search._sketch", str(target))
    found = importlib.util.spec_from_file_location("goclaw_search._sketch", target, loader=loader)
    assert found is not None
    module = importlib.util.module_from_spec(found)
    loader.exec_module(module)
    assert static_passages._usable(module)


def test_the_c_wordpiece_gives_the_tokenizers_ids(emb: StaticEmbedder) -> None:
    """Printable-ASCII pieces are tokenised in C (the bundled model is BERT WordPiece): the same
    ids as the tokenizer on 6,000 random pieces (mixed case, digits, punctuation, sub-words,
    words over 100 characters, pieces over 512 tokens), unknown tokens dropped alike."""
    settings = static_passages._wordpiece(emb)
    assert settings["max_chars"] == 100 and settings["max_tokens"] == 512
    rnd = random.Random(4)
    stems = ["kestrel", "Gateway", "unbelievably", "TCK", "4471", "refund", "xqzvw", "ing", "s", "ed", "Ω"]
    alphabet = [chr(c) for c in range(0x21, 0x7F) if chr(c) != "["]
    pieces = set()
    for _ in range(6000):
        kind = rnd.random()
        if kind < 0.5:
            piece = "".join(rnd.choice(stems[:-1]) for _ in range(rnd.randint(1, 4)))
            piece += "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 3)))
        elif kind < 0.9:
            piece = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 30)))
        else:
            piece = rnd.choice(["a", "!", "ab1"]) * rnd.randint(30, 700)
        pieces.add(piece)
    ordered = sorted(pieces)
    sk = sketch_c.Sketcher(emb._matrix, lambda p: pytest.fail(f"tokenised in Python: {p[:3]}"), **settings)
    want = emb._piece_ids(ordered)
    for piece, ids in zip(ordered, want, strict=True):
        tokens = np.frombuffer(sk.batch([piece])[0], np.uint32).tolist()
        assert tokens == ids, piece
    assert any(len(ids) == 512 for ids in want)
    assert any(not ids for ids in want)  # a word over 100 characters: unknown, dropped


def test_another_tokenizer_setup_is_tokenised_in_python(emb: StaticEmbedder) -> None:
    """The C WordPiece only stands in for the setup it repeats."""
    import json

    spec = json.loads(emb._tokenizer.to_str())  # type: ignore[union-attr]

    class Tok:
        truncation = None

        def __init__(self, spec: dict[str, Any]) -> None:
            self.spec = spec

        def to_str(self) -> str:
            return json.dumps(self.spec)

    fake = StaticEmbedder()
    fake._tokenizer = Tok(spec)  # type: ignore[assignment]
    assert static_passages._wordpiece(fake)["max_tokens"] == 0
    for key, value in [("normalizer", {"type": "NFC"}), ("pre_tokenizer", {"type": "Whitespace"})]:
        fake._tokenizer = Tok({**spec, key: value})  # type: ignore[assignment]
        assert static_passages._wordpiece(fake) == {}
    fake._tokenizer = Tok({**spec, "added_tokens": [{"content": "<s>"}]})  # type: ignore[assignment]
    assert static_passages._wordpiece(fake) == {}
    fake._tokenizer = Tok({**spec, "model": {**spec["model"], "continuing_subword_prefix": "@@"}})  # type: ignore[assignment]
    assert static_passages._wordpiece(fake) == {}
