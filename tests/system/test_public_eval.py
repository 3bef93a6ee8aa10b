"""benchmarks/public_eval.py: Cranfield and CISI read from their original files, and its own BM25."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers import load_script

ROOT = Path(__file__).resolve().parents[2]

CRAN_ALL = """.I 1\r
.T\r
wing in a slipstream .\r
.A\r
brenckman,m.\r
.B\r
j. ae. scs. 25, 1958, 324.\r
.W\r
wing in a slipstream .\r
  an experimental study of a wing\r
in a propeller slipstream .\r
.I 2\r
.T\r
shear flow past a flat plate .\r
.A\r
.B\r
.W\r
shear flow past a flat plate .\r
.I 3\r
.T\r
.A\r
.B\r
.W\r
"""
CRAN_QRY = """.I 001\r
.W\r
what is the lift of a wing\r
in a slipstream .\r
.I 004\r
.W\r
flat plate shear flow .\r
"""
CRANQREL = "1 1 2 \r\n1 2 4\r\n1 3 -1\r\n2 2 1\r\n"

CISI_ALL = """.I 1
.T
18 Editions of the Dewey Decimal Classifications
.A
Comaromi, J.P.
.W
   The present study is a history of the DEWEY Decimal
Classification.
.X
1\t5\t1
.I 2
.T\x20
Use Made of Technical Libraries
.W
    This report is an analysis of 6300 acts of use.
.X
2\t1\t2
"""
CISI_QRY = """.I 1
.W
What problems and concerns are there in making up descriptive titles?
.I 2
.T
Library use
.A
Someone, A.
.W
How are technical libraries used?
.B
1979
.I 3
.W
A query nobody judged.
"""
CISI_REL = "     1     1 0 0.000000\n     2     2\t0\t0.000000\n"


def _module() -> ModuleType:
    return load_script(ROOT / "benchmarks" / "public_eval.py")


def _write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_bytes(text.encode("utf-8"))
    return folder


def test_cranfield_queries_are_renumbered_and_grades_become_gains(tmp_path: Path) -> None:
    pe = _module()
    folder = _write(
        tmp_path / "cranfield", {"cran.all.1400": CRAN_ALL, "cran.qry": CRAN_QRY, "cranqrel": CRANQREL}
    )
    c = pe.load_smart(folder)
    assert c.docs["1"] == (
        "wing in a slipstream .",
        "wing in a slipstream . an experimental study of a wing in a propeller slipstream .",
    )
    assert c.docs["3"] == ("", "")
    # cran.qry says 001 and 004; cranqrel counts them 1 and 2
    assert c.queries == {"1": "what is the lift of a wing in a slipstream .", "2": "flat plate shear flow ."}
    # grade 1 (a complete answer) weighs most; -1 counts as not relevant
    assert c.qrels == {"1": {"1": 3, "2": 1, "3": 0}, "2": {"2": 4}}
    assert c.metric == "ndcg@10"


def test_cisi_reads_text_and_keeps_only_judged_queries(tmp_path: Path) -> None:
    pe = _module()
    folder = _write(tmp_path / "cisi", {"CISI.ALL": CISI_ALL, "CISI.QRY": CISI_QRY, "CISI.REL": CISI_REL})
    c = pe.load_smart(folder)
    assert c.docs == {
        "1": (
            "18 Editions of the Dewey Decimal Classifications",
            "The present study is a history of the DEWEY Decimal Classification.",
        ),
        "2": ("Use Made of Technical Libraries", "This report is an analysis of 6300 acts of use."),
    }
    assert c.queries == {
        "1": "What problems and concerns are there in making up descriptive titles?",
        "2": "How are technical libraries used?",
    }
    assert c.qrels == {"1": {"1": 1}, "2": {"2": 1}}


def test_the_numpy_bm25_ranks_as_bm25s() -> None:
    pytest.importorskip("bm25s")
    pytest.importorskip("Stemmer")
    pe = _module()
    texts = [
        "wing lift in a propeller slipstream",
        "shear flow past a flat plate",
        "lift and drag of a flat wing at high speed, wing tips",
        "heat conduction in composite slabs",
        "slipstream effects on the lift of wings and the flow past them",
    ]
    docs = {str(i): ("", t) for i, t in enumerate(texts)}
    queries = {"a": "lift of a wing in a slipstream", "b": "flat plate flow flow", "c": "nothing matches"}
    c = pe.Collection("toy", "ndcg@10", docs, queries, {q: {} for q in queries})
    ours, theirs = pe.bm25_numpy_rank(c), pe.bm25s_rank(c)
    for q, text in queries.items():
        got = ours(q, text)
        assert got == theirs(q, text)[: len(got)], q
    assert ours("a", queries["a"])[0] in {"0", "4"}
    assert ours("c", queries["c"]) == []
