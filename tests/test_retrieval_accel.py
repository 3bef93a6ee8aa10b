"""The optional C accelerator (goclaw/retrieval/_accel.c, issue 11: indexing speed) gives exactly
the pure-Python path's terms and term ids; its build hook falls back to pure Python without a
compiler."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goclaw.retrieval import index as index_mod
from goclaw.retrieval import tokenize
from goclaw.retrieval.index import Doc, SearchIndex
from goclaw.retrieval.tokenize import Tokenizer

ROOT = Path(__file__).resolve().parents[1]
needs_accel = pytest.mark.skipif(tokenize.accel is None, reason="the C accelerator is not built here")

WORDS = ["the", "Running", "runs", "TCK-4471", "src/app.py", "user_id", "v1.2.3", "ops@example.com",
         "a--b", "end.", "...", "-x-", "C++", "#42", "x" * 230, "42", "I", "tck", "4471", "app"]  # fmt: skip
UNICODE = ["naïve", "café", "東京タワー", "Ünïcödé"]
SEPARATORS = [" ", "  ", "\n", "\t", "\r\n", "\x0b", "\x0c", ", ", "; ", "(", ")", "'", '"', "!?", "-", "/"]


def _texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        parts = []
        words = WORDS + UNICODE if rng.random() < 0.3 else WORDS
        for _ in range(rng.randint(0, 60)):
            if rng.random() < 0.15:  # random ASCII noise: any byte 0-127
                parts.append("".join(chr(rng.randint(0, 127)) for _ in range(rng.randint(1, 12))))
            else:
                w = rng.choice(words)
                parts.append(w.upper() if rng.random() < 0.1 else w)
            parts.append(rng.choice(SEPARATORS))
        out.append("".join(parts))
    return out


@needs_accel
def test_compiled_and_pure_tokenizers_give_the_same_terms() -> None:
    texts = _texts(7, 3_000)
    assert sum(t.isascii() for t in texts) > 1_000  # the compiled path runs on ASCII text
    pure, fast = Tokenizer(compiled=False), Tokenizer()
    assert pure._fast is None and fast._fast is not None
    for _ in range(2):  # cold, then every piece from the cache
        for text in texts:
            assert fast.terms(text) == pure.terms(text), text
    assert fast._ascii == pure._ascii  # the same piece cache was filled


@needs_accel
def test_compiled_and_pure_bulk_loads_build_the_same_index(monkeypatch: pytest.MonkeyPatch) -> None:
    tok = Tokenizer(compiled=False)
    docs = [Doc(i, "", tok.terms(t)) for i, t in enumerate(_texts(11, 2_000))]
    built = []
    for compiled in (True, False):
        if not compiled:
            monkeypatch.setattr(tokenize, "accel", None)
        idx = SearchIndex()
        idx.upsert(docs[:1_500])
        idx.upsert(docs[1_200:])  # a second load: known and new terms, replaced documents
        built.append(idx)
    a, b = built
    assert list(a.vocab.items()) == list(b.vocab.items())
    a._consolidate(), b._consolidate()
    for name in ("_indptr", "_slots", "_tf"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(a.fwd.arrays()["fwd_terms"], b.fwd.arrays()["fwd_terms"])
    assert index_mod.tokenize is tokenize


@needs_accel
def test_the_compiled_functions_refuse_bad_arguments() -> None:
    accel: Any = tokenize.accel
    with pytest.raises(TypeError):
        accel.ascii_terms("café", tokenize._ASCII_BYTES, {}, lambda p: ())
    with pytest.raises(TypeError):
        accel.ascii_terms("a b", tokenize._ASCII_BYTES, {}, lambda p: ["a"])  # not a tuple
    with pytest.raises(ZeroDivisionError):
        accel.ascii_terms("a b", tokenize._ASCII_BYTES, {}, lambda p: 1 / 0)
    with pytest.raises(ValueError, match="more terms"):
        accel.term_ids({}, [["a", "b"]], 1)
    with pytest.raises(ValueError, match="fewer terms"):
        accel.term_ids({}, [["a"]], 2)
    vocab: dict[str, int] = {"b": 0}
    ids = np.frombuffer(accel.term_ids(vocab, [["a", "b"], ("a", "c")], 4), dtype=np.int64)
    assert ids.tolist() == [1, 0, 1, 2] and vocab == {"b": 0, "a": 1, "c": 2}


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

    module = types.ModuleType("goclaw.retrieval._accel")
    assert not tokenize._usable(module)  # no ABI: built before the ABI existed
    module.ABI = tokenize.ACCEL_ABI + 1  # type: ignore[attr-defined]
    assert not tokenize._usable(module)
    module.ABI = tokenize.ACCEL_ABI  # type: ignore[attr-defined]
    assert tokenize._usable(module)


@needs_accel
def test_the_built_accelerator_has_this_checkouts_abi() -> None:
    assert tokenize.accel is not None and tokenize.accel.ABI == tokenize.ACCEL_ABI
