"""The C passage sketcher's lifetime (libs/goclaw_search/_sketch.c via goclaw_embeddings.static_passages):
an embedder that made one is freed once dropped (no reference cycle through the sketcher, which the
cycle collector cannot see), and a sketcher never initialised raises instead of crashing."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

import pytest

from goclaw_embeddings import static_passages
from goclaw_embeddings.static_model import StaticEmbedder

sketch_c = pytest.importorskip("goclaw_search._sketch")


def test_a_dropped_embedder_is_freed_after_its_c_sketcher_ran() -> None:
    refs = []
    for _ in range(2):
        emb = StaticEmbedder()
        static_passages.sketches(emb, ["# day\n- the gateway rolled back TCK-4471\n- other"])
        assert getattr(emb, "_c_sketcher", None) is not None
        refs.append(weakref.ref(emb))
        del emb
    gc.collect()
    assert all(r() is None for r in refs)


def test_an_uninitialised_sketcher_raises_instead_of_crashing() -> None:
    code = (
        "from goclaw_search import _sketch\n"
        "s = _sketch.Sketcher.__new__(_sketch.Sketcher)\n"
        "try:\n    s.batch(['hello world'])\nexcept RuntimeError as e:\n    print('raised', e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "raised" in done.stdout


# Sketcher's keyword arguments at each ABI: a change of them must bump SKETCH_ABI (in _sketch.c and
# static_passages.py), or a module an editable install built from an older checkout is called
# with arguments it does not take (and the passage step silently falls back to reading text).
_KEYWORDS_OF_ABI = {
    1: set(),
    2: {"vocab", "unk", "drop", "max_chars", "max_tokens"},
}


def test_the_sketcher_abi_matches_its_arguments() -> None:
    import numpy as np

    assert sketch_c.ABI == static_passages.SKETCH_ABI
    known = _KEYWORDS_OF_ABI.get(sketch_c.ABI)
    assert known is not None, "record this ABI's keyword arguments above"
    matrix = np.zeros((4, 2), dtype=np.float32)
    for name in sorted(_KEYWORDS_OF_ABI[max(_KEYWORDS_OF_ABI)]):
        args: dict[str, object] = {"vocab": {}, "unk": 0, name: {} if name == "vocab" else 0}
        try:
            sketch_c.Sketcher(matrix, lambda pieces: [], **args)
            accepted = True
        except TypeError:
            accepted = False
        assert accepted == (name in known), (sketch_c.ABI, name)
