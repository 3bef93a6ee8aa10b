"""The search library's fusion weights by default are the memory search contract's
(goclaw.contracts.search.FusionSettings: 0.7 on the text channel, 0.3 on the vector one), and
the library imports nothing of goclaw."""

from __future__ import annotations

import inspect
import subprocess
import sys

import numpy as np

from goclaw.contracts.search import FusionSettings
from goclaw_search import fusion
from goclaw_search.index import Doc, SearchIndex


def test_the_library_defaults_are_the_contracts() -> None:
    want = FusionSettings()
    for fn in (fusion.fuse, fusion.fuse_lists, fusion.fuse_bounded, SearchIndex.fuse):
        params = inspect.signature(fn).parameters
        assert params["text_weight"].default == want.text_weight, fn
        assert params["vector_weight"].default == want.vector_weight, fn


def test_a_fusion_with_the_defaults_weighs_text_first() -> None:
    lexical = np.array([1.0, 0.0], dtype=np.float32)
    cosine = np.array([0.0, 1.0], dtype=np.float32)
    got = fusion.fuse_lists(lexical, cosine, None, limit=2)
    assert got.slots == [0, 1] and np.allclose(got.scores, [0.7, 0.3])
    idx = SearchIndex(2)
    idx.upsert([Doc(1, "", ["a"], [1.0, 0.0]), Doc(2, "", ["b"], [0.0, 1.0])])
    fused = idx.fuse(idx.bm25(["a"]), idx.unit_query([0.0, 1.0]), None, limit=2)
    assert fused.slots == [0, 1] and np.allclose(fused.scores, [0.7, 0.3])


def test_the_library_imports_nothing_of_goclaw() -> None:
    code = (
        "import sys, pkgutil, importlib, goclaw_search\n"
        "for m in pkgutil.iter_modules(goclaw_search.__path__):\n"
        "    importlib.import_module('goclaw_search.' + m.name)\n"
        "print(sorted(n for n in sys.modules if n == 'goclaw' or n.startswith('goclaw.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
