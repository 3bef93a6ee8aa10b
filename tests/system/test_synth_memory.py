"""benchmarks/synth_memory.py: synthetic long memory with planted facts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from goclaw_memory.chunking import chunk_text
from goclaw_memory.evaluation import parse_questions
from tests.helpers import load_script

ROOT = Path(__file__).resolve().parents[2]


def _module() -> ModuleType:
    return load_script(ROOT / "benchmarks" / "synth_memory.py")


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def _chunks(root: Path) -> dict[str, list[Any]]:
    return {
        str(p.relative_to(root)): chunk_text(p.read_text(encoding="utf-8"))
        for p in sorted((root / "memory").rglob("*.md"))
    }


def test_exact_chunk_count_and_every_fact_is_one_chunk(tmp_path: Path) -> None:
    synth = _module()
    questions = synth.generate(tmp_path, n_chunks=600, n_facts=40, seed=3)
    chunks = _chunks(tmp_path)
    assert sum(len(c) for c in chunks.values()) == 600
    corpus = "\n".join(p.read_text(encoding="utf-8") for p in (tmp_path / "memory").rglob("*.md"))
    facts = [q for q in questions if q["kind"] != "unanswerable"]
    assert len(facts) == 3 * 40
    assert {q["kind"] for q in facts} == {"exact-code", "partial", "paraphrase"}
    for q in facts:
        (evidence,) = q["expect"]
        spans = {(c.start_line, c.end_line): c.text for c in chunks[evidence["path"]]}
        text = spans.get(tuple(evidence["lines"]))
        assert text is not None, f"{q['id']}: evidence is not exactly one chunk"
        assert q["note"] in text  # the planted sentence is in its chunk ...
        assert corpus.count(q["note"]) == 1  # ... and nowhere else
    # The harness reads them as they are.
    lines = (tmp_path / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == questions
    parsed = parse_questions(lines)
    assert sum(1 for q in parsed if q.kind == "unanswerable") == 4


def test_the_same_seed_writes_the_same_bytes(tmp_path: Path) -> None:
    synth = _module()
    a = synth.generate(tmp_path / "a", 300, 20, seed=11)
    b = synth.generate(tmp_path / "b", 300, 20, seed=11)
    c = synth.generate(tmp_path / "c", 300, 20, seed=12)
    assert a == b and _digest(tmp_path / "a") == _digest(tmp_path / "b")
    assert a != c and _digest(tmp_path / "a") != _digest(tmp_path / "c")


def test_near_duplicates_and_varied_vocabulary(tmp_path: Path) -> None:
    synth = _module()
    synth.generate(tmp_path, 2000, 30, seed=5)
    corpus = "\n".join(p.read_text(encoding="utf-8") for p in (tmp_path / "memory").rglob("*.md"))
    # The planted templates recur as distractors about other entities.
    assert corpus.count("Door code for the ") > 10
    assert corpus.count("prefers to be contacted by") > 10
    words = set(corpus.split())
    assert len(words) > 5000  # names, companies, codes, numbers


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    synth = _module()
    with pytest.raises(ValueError):
        synth.generate(tmp_path, 10, 20, seed=1)


@pytest.mark.slow
def test_generates_a_100k_chunk_corpus_with_its_questions(tmp_path: Path) -> None:
    synth = _module()
    questions = synth.generate(tmp_path, 100_000, 150, seed=7)
    assert len(questions) == 150 * 3 + 15
