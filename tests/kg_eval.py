"""Precision / recall of the model-free entity extractor on a small labelled set.

``tests/data/kg_entities.jsonl``: one sentence a line, in the style of the episodic summaries
the extractor reads (agent conversations, the extractive summary's "User:"/"Session about"
lines), with the entities a careful reader would record and their types. Labelling rules:
named things only (people, organisations, places, projects, products, software); software,
languages and hosted services are ``technology``, companies ``organization``, hardware and
end-user products ``product``; no weekdays, months, generic acronyms (API, VPN, CTO) or
adjectives. ``aliases`` lists other acceptable spellings ("Dr. Patel" for "Patel").

A predicted entity counts when its normalised name equals a gold name or alias of the same
sentence; "typed" also needs the type to match.

    python -m tests.kg_eval             # prints the figures and every miss
    python -m tests.kg_eval --holdout   # the same on the held-out set
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "kg_entities.jsonl"
# Written after the rules were tuned on DATA, never tuned on: how well they generalise.
HOLDOUT = Path(__file__).parent / "data" / "kg_entities_holdout.jsonl"


@dataclass
class Score:
    gold: int = 0
    predicted: int = 0
    correct: int = 0
    typed: int = 0
    false_positives: list[tuple[str, str]] = field(default_factory=list)
    missed: list[tuple[str, str]] = field(default_factory=list)
    mistyped: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.correct / self.predicted if self.predicted else 1.0

    @property
    def recall(self) -> float:
        return self.correct / self.gold if self.gold else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def type_accuracy(self) -> float:
        """Share of the correctly found entities that also have the right type."""
        return self.typed / self.correct if self.correct else 0.0


def load(path: Path = DATA) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def evaluate(path: Path = DATA) -> Score:
    from goclaw_kg.semantic import heuristic_extract
    from goclaw_text.entities import normalize_name

    score = Score()
    for row in load(path):
        gold: dict[str, tuple[str, str]] = {}  # normalised spelling -> (gold name, type)
        for e in row["entities"]:
            for spelling in [e["name"], *e.get("aliases", [])]:
                gold[normalize_name(spelling)] = (e["name"], e["type"])
        score.gold += len(row["entities"])
        found: set[str] = set()
        for e in heuristic_extract(row["text"]).entities:
            score.predicted += 1
            hit = gold.get(normalize_name(str(e["name"])))
            if hit is None or hit[0] in found:
                score.false_positives.append((str(e["name"]), row["text"]))
                continue
            found.add(hit[0])
            score.correct += 1
            if e["type"] == hit[1]:
                score.typed += 1
            else:
                score.mistyped.append((hit[0], str(e["type"]), hit[1]))
        score.missed += [(e["name"], row["text"]) for e in row["entities"] if e["name"] not in found]
    return score


def main() -> None:
    import sys

    path = HOLDOUT if "--holdout" in sys.argv else DATA
    s = evaluate(path)
    print(f"{path.name}: {len(load(path))} sentences, gold entities: {s.gold}, predicted: {s.predicted}")
    print(f"precision {s.precision:.3f}  recall {s.recall:.3f}  F1 {s.f1:.3f}", end="  ")
    print(f"type accuracy {s.type_accuracy:.3f}")
    for name, text in s.false_positives:
        print(f"  false positive  {name!r:28} {text}")
    for name, text in s.missed:
        print(f"  missed          {name!r:28} {text}")
    for name, got, want in s.mistyped:
        print(f"  mistyped        {name!r:28} {got} (want {want})")


if __name__ == "__main__":
    main()
